"""The step graph (spec section 4): layers, cycles, transitive dependents; checked against graphlib."""

import graphlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graph import CycleError, Graph


def layers(deps):
    return Graph(deps).layers()


def cycle_of(deps):
    with pytest.raises(CycleError) as caught:
        Graph(deps).layers()
    return caught.value.cycle


def assert_real_cycle(cycle, deps):
    """A cycle in execution order: each id depends on the one before it; the first id is repeated last."""
    assert len(cycle) >= 2 and cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1
    for before, after in zip(cycle, cycle[1:]):
        assert before in deps[after], f"{after} does not depend on {before}"


# -- layers ------------------------------------------------------------------------


def test_a_diamond_has_three_layers_with_the_middle_sorted():
    deps = {"top": [], "right": ["top"], "left": ["top"], "bottom": ["left", "right"]}
    assert layers(deps) == [["top"], ["left", "right"], ["bottom"]]


def test_a_chain_has_one_step_per_layer():
    deps = {"d": ["c"], "c": ["b"], "b": ["a"], "a": []}
    assert layers(deps) == [["a"], ["b"], ["c"], ["d"]]


def test_a_wide_graph_puts_every_independent_step_in_one_sorted_layer():
    names = [f"s{i:03d}" for i in range(500)]
    deps = {name: [] for name in reversed(names)}
    deps["z_join"] = list(names)
    assert layers(deps) == [names, ["z_join"]]


def test_ids_inside_a_layer_are_sorted_by_code_point():
    deps = {"b": [], "a_2": [], "a10": [], "a2": [], "B": [], "_x": [], "a": []}
    assert layers(deps) == [sorted(deps)]
    assert layers(deps)[0] == ["B", "_x", "a", "a10", "a2", "a_2", "b"]


def test_a_step_sits_in_the_layer_after_its_latest_dependency():
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": ["a"], "e": ["c", "d"], "f": []}
    assert layers(deps) == [["a", "f"], ["b", "d"], ["c"], ["e"]]


def test_duplicate_edges_count_once():
    deps = {"a": [], "b": ["a", "a", "a"], "c": ["b", "a", "b"]}
    assert layers(deps) == [["a"], ["b"], ["c"]]


def test_isolated_nodes_are_in_the_first_layer():
    deps = {"solo": [], "a": [], "b": ["a"], "other": []}
    assert layers(deps) == [["a", "other", "solo"], ["b"]]


def test_an_empty_graph_has_no_layers():
    assert layers({}) == []


# -- cycles ------------------------------------------------------------------------


def test_a_self_loop_is_a_cycle_of_one_step():
    assert cycle_of({"a": [], "loop": ["loop"]}) == ["loop", "loop"]


def test_a_two_cycle_is_named_from_its_smallest_id():
    deps = {"x": ["y"], "y": ["x"]}
    assert cycle_of(deps) == ["x", "y", "x"]


def test_a_three_cycle_inside_a_bigger_graph_is_named_in_execution_order():
    deps = {"start": [], "a": ["start"], "p": ["a", "r"], "q": ["p"], "r": ["q"], "end": ["r"], "other": ["a"]}
    cycle = cycle_of(deps)
    assert cycle == ["p", "q", "r", "p"]
    assert_real_cycle(cycle, deps)


def test_the_cycle_error_message_spells_the_cycle_with_arrows():
    with pytest.raises(CycleError, match=r"a -> b -> c -> a"):
        Graph({"a": ["c"], "b": ["a"], "c": ["b"]}).layers()


def test_a_step_downstream_of_a_cycle_is_not_named_in_it():
    deps = {"aa": ["m"], "m": ["n"], "n": ["m"], "zz": ["aa"]}
    cycle = cycle_of(deps)
    assert cycle == ["m", "n", "m"]
    assert_real_cycle(cycle, deps)


def test_with_two_cycles_the_error_names_one_of_them_completely():
    deps = {"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c"], "e": ["a", "c"]}
    cycle = cycle_of(deps)
    assert_real_cycle(cycle, deps)
    assert cycle[0] == min(cycle)


# -- transitive dependents ---------------------------------------------------------


def test_transitive_dependents_follow_every_path_downstream_and_exclude_the_root():
    graph = Graph({"a": [], "b": ["a"], "c": ["b"], "d": ["a"], "e": ["c", "d"], "f": []})
    assert graph.transitive_dependents(["b"]) == {"c", "e"}
    assert graph.transitive_dependents(["a"]) == {"b", "c", "d", "e"}
    assert graph.transitive_dependents(["e"]) == set()
    assert graph.transitive_dependents(["f"]) == set()


def test_transitive_dependents_of_several_roots_are_their_union():
    graph = Graph({"a": [], "b": ["a"], "x": [], "y": ["x"], "z": ["y", "b"]})
    assert graph.transitive_dependents(["a", "x"]) == {"b", "y", "z"}
    assert graph.transitive_dependents([]) == set()


def test_a_root_that_depends_on_another_root_is_reported_as_a_dependent():
    graph = Graph({"a": [], "b": ["a"], "c": ["b"]})
    assert graph.transitive_dependents(["a", "b"]) == {"b", "c"}


# -- properties --------------------------------------------------------------------

NAME = st.text(alphabet="abcxyz_019", min_size=1, max_size=6)


@st.composite
def dags(draw):
    """Edges go only from a lower to a higher index, so there is no cycle; the names are shuffled."""
    names = draw(st.lists(NAME, min_size=1, max_size=25, unique=True))
    names = draw(st.permutations(names))
    deps = {name: [] for name in names}
    for later in range(1, len(names)):
        earlier = draw(st.lists(st.integers(0, later - 1), max_size=4))
        deps[names[later]] = [names[i] for i in earlier]
    order = draw(st.permutations(names))
    return {name: deps[name] for name in order}


def graphlib_layers(deps):
    sorter = graphlib.TopologicalSorter(deps)
    sorter.prepare()
    result = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        result.append(ready)
        sorter.done(*ready)
    return result


@settings(max_examples=300)
@given(dags())
def test_random_dags_are_layered_exactly_as_graphlib_does_it(deps):
    result = layers(deps)
    placed = [name for layer in result for name in layer]
    assert sorted(placed) == sorted(deps) and len(placed) == len(set(placed))
    where = {name: k for k, layer in enumerate(result) for name in layer}
    for name, own in deps.items():
        assert all(where[d] < where[name] for d in own)
        assert where[name] == (max((where[d] for d in own), default=-1) + 1)
    assert all(layer == sorted(layer) for layer in result)
    assert result == graphlib_layers(deps)


@settings(max_examples=300)
@given(dags(), st.data())
def test_adding_a_back_edge_to_a_dag_always_raises_a_real_cycle(deps, data):
    where = {name: k for k, layer in enumerate(layers(deps)) for name in layer}
    names = sorted(deps)
    upstream = data.draw(st.sampled_from(names))
    candidates = sorted({upstream} | Graph(deps).transitive_dependents([upstream]))
    downstream = data.draw(st.sampled_from(candidates))
    assert where[downstream] >= where[upstream]
    cyclic = {name: list(own) for name, own in deps.items()}
    cyclic[upstream].append(downstream)  # upstream now waits for something that waits for it
    with pytest.raises(CycleError) as caught:
        Graph(cyclic).layers()
    cycle = caught.value.cycle
    assert_real_cycle(cycle, cyclic)
    assert cycle[0] == min(cycle)
    with pytest.raises(graphlib.CycleError):
        graphlib_layers(cyclic)
