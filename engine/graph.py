"""The step graph: execution layers, cycles, transitive dependents.

Shaped like graphlib: build from a dependency map, check for a cycle (the
error carries one cycle in order), then hand out layers with ids sorted.
Internally nodes are integers so layering is linear in steps plus edges
(plus the sort inside each layer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


class CycleError(ValueError):
    """The graph has a cycle; `cycle` lists it in execution order, first id repeated at the end."""

    def __init__(self, cycle: list[str]):
        self.cycle = cycle
        super().__init__("dependency cycle: " + " -> ".join(cycle))


class Graph:
    """A frozen dependency graph.

    Args:
        dependencies: for each node id, the ids it depends on. Every id named
            as a dependency must itself be a key.
    """

    __slots__ = ("ids", "index", "deps", "dependents")

    def __init__(self, dependencies: Mapping[str, Iterable[str]]):
        self.ids: list[str] = list(dependencies)
        index = {node: i for i, node in enumerate(self.ids)}
        self.index = index
        deps: list[tuple[int, ...]] = []
        dependents: list[list[int]] = [[] for _ in self.ids]
        for i, node in enumerate(self.ids):
            own = tuple(dict.fromkeys(index[d] for d in dependencies[node]))
            deps.append(own)
            for d in own:
                dependents[d].append(i)
        self.deps = deps
        self.dependents = dependents

    def layers(self) -> list[list[str]]:
        """Execution layers: layer k holds every node whose dependencies are all in earlier layers.

        Raises:
            CycleError: naming one cycle in order.
        """
        ids = self.ids
        dependents = self.dependents
        remaining = [len(d) for d in self.deps]
        current = [i for i, count in enumerate(remaining) if count == 0]
        layers: list[list[str]] = []
        placed = 0
        while current:
            names = sorted([ids[i] for i in current])
            layers.append(names)
            placed += len(current)
            following: list[int] = []
            append = following.append
            for i in current:
                for j in dependents[i]:
                    count = remaining[j] - 1
                    remaining[j] = count
                    if count == 0:
                        append(j)
            current = following
        if placed != len(ids):
            raise CycleError(self._find_cycle([i for i, count in enumerate(remaining) if count > 0]))
        return layers

    def _find_cycle(self, unplaced: Sequence[int]) -> list[str]:
        """One cycle among the nodes Kahn's algorithm could not place, from the smallest id."""
        ids = self.ids
        candidates = set(unplaced)
        start = min(unplaced, key=lambda i: ids[i])
        # Every unplaced node has an unplaced dependency, so walking dependencies
        # from any of them must revisit a node: that revisit closes a cycle.
        seen: dict[int, int] = {}
        path: list[int] = []
        node = start
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = min((d for d in self.deps[node] if d in candidates), key=lambda i: ids[i])
        cycle = path[seen[node]:]
        cycle.reverse()  # dependencies were walked backwards; report in execution order
        first = cycle.index(min(cycle, key=lambda i: ids[i]))
        cycle = cycle[first:] + cycle[:first]
        return [ids[i] for i in cycle] + [ids[cycle[0]]]

    def transitive_dependents(self, roots: Iterable[str]) -> set[str]:
        """Every node that depends, directly or not, on one of `roots` (the roots excluded)."""
        index, ids, dependents = self.index, self.ids, self.dependents
        stack = [index[r] for r in roots]
        found: set[int] = set()
        while stack:
            for j in dependents[stack.pop()]:
                if j not in found:
                    found.add(j)
                    stack.append(j)
        return {ids[i] for i in found}
