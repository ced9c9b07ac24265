"""What a path means: resolution of `init.outputs.x`, `$gate.approved`, `vars.region`, ...

Expressions and templates share this, so `${a.b}` in a command and `a.b` in a
condition always name the same value.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""A path that does not resolve (an expression reads it as null; a template fails on it)."""

RESERVED_ROOTS = frozenset({"vars", "args", "run", "loop"})


class Scope:
    """The values a path can reach.

    Args:
        step_ids: every step id of the workflow (a bare first segment naming
            one is a step reference).
        outputs: accumulated outputs of the steps that have them, by step id.
        stdout: stdout of the steps that have run, by step id.
        variables: the run's flat variables map.
        args: the run's arguments.
        run: run facts (`id`, `started_at`).
        local: names that win over everything else in this context
            (`outputs` in success criteria, `output` in `loop.until`, `loop` in a loop step's templates).
    """

    __slots__ = ("step_ids", "outputs", "stdout", "variables", "args", "run", "local")

    def __init__(self, *, step_ids: Collection[str] = (), outputs: Mapping[str, Any] | None = None,
                 stdout: Mapping[str, str] | None = None, variables: Mapping[str, Any] | None = None,
                 args: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
                 local: Mapping[str, Any] | None = None):
        self.step_ids = step_ids
        self.outputs = outputs if outputs is not None else {}
        self.stdout = stdout if stdout is not None else {}
        self.variables = variables if variables is not None else {}
        self.args = args if args is not None else {}
        self.run = run if run is not None else {}
        self.local = local if local is not None else {}

    def with_local(self, local: Mapping[str, Any]) -> Scope:
        return Scope(step_ids=self.step_ids, outputs=self.outputs, stdout=self.stdout,
                     variables=self.variables, args=self.args, run=self.run, local=local)

    def resolve(self, dollar: bool, segments: tuple) -> Any:
        """The value a path names, or MISSING."""
        root = segments[0]
        rest = segments[1:]
        if dollar:
            return self._step(root, rest)
        if root in self.local:
            return walk(self.local[root], rest)
        if root == "vars":
            return walk(self.variables, rest)
        if root == "args":
            return walk(self.args, rest)
        if root == "run":
            return walk(self.run, rest)
        if root == "loop":
            return MISSING  # only a loop step's calls have it (as a local), never a variable of that name
        if root in self.step_ids:
            return self._step(root, rest)
        if root in self.variables:
            return walk(self.variables[root], rest)
        return MISSING

    def _step(self, step: str, rest: tuple) -> Any:
        if rest and rest[0] == "stdout":
            if step not in self.stdout:
                return MISSING
            return walk(self.stdout[step], rest[1:])
        outputs = self.outputs.get(step, MISSING)
        if outputs is MISSING:
            return MISSING
        if rest and rest[0] == "outputs":
            rest = rest[1:]
        return walk(outputs, rest)


def walk(value: Any, segments: tuple) -> Any:
    """Follow `segments` into nested mappings and lists; `.length` of a list or string is its size."""
    for segment in segments:
        if isinstance(value, Mapping):
            value = value.get(segment, MISSING) if isinstance(segment, str) else MISSING
        elif isinstance(value, (list, tuple)):
            if segment == "length":
                value = len(value)
            elif isinstance(segment, int) and 0 <= segment < len(value):
                value = value[segment]
            else:
                return MISSING
        elif isinstance(value, str) and segment == "length":
            value = len(value)
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value
