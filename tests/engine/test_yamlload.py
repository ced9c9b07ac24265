"""engine.yamlload: one bounded YAML 1.2 document, with the position of every node (spec sections 3 and 13)."""

import math

import pytest

from engine.yamlload import YamlLoadError, load


def load_error(data):
    """The problem `load` raises for `data` (the test fails if it loads)."""
    with pytest.raises(YamlLoadError) as caught:
        load(data)
    return caught.value.problem


# -- scalars: the YAML 1.2 core schema -----------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("Yes", "Yes"), ("y", "y"),
    ("1:30", "1:30"),
    ("017", 17),
    ("0o17", 15),
    ("0x1f", 31),
    ("-12", -12),
    ("1.5", 1.5),
    ("1e3", 1000.0),
    ("~", None), ("null", None), ("Null", None), ("", None),
    ("true", True), ("false", False), ("True", True),
    ('"true"', "true"), ("'017'", "017"), ('"null"', "null"),
    ("2024-01-31", "2024-01-31"),
    ("0b101", "0b101"),
    ("1_000", "1_000"),
])
def test_it_reads_a_plain_scalar_by_the_yaml_1_2_core_schema(text, expected):
    value = load(f"v: {text}\n").value["v"]
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(("text", "expected"), [(".inf", math.inf), ("-.inf", -math.inf), ("+.inf", math.inf)])
def test_it_reads_infinities(text, expected):
    assert load(f"v: {text}\n").value["v"] == expected


def test_it_reads_dot_nan_as_not_a_number():
    assert math.isnan(load("v: .nan\n").value["v"])


def test_yes_as_a_key_stays_the_string_yes():
    assert load("yes: 1\non: 2\n").value == {"yes": 1, "on": 2}


def test_keys_of_different_types_are_not_duplicates():
    # YAML 1.2: the bool true and the int 1 are different nodes, so this mapping has two keys.
    assert len(load("true: a\n1: b\n").value) == 2


# -- positions --------------------------------------------------------------------------------------

def test_it_records_the_line_and_column_of_values_and_keys_in_block_style():
    loaded = load("name: wf\nsteps:\n  - id: first\n    command: go\n")
    assert loaded.position(("name",)) == (1, 7)
    assert loaded.position(("name",), key=True) == (1, 1)
    assert loaded.position(("steps",), key=True) == (2, 1)
    assert loaded.position(("steps", 0)) == (3, 5)
    assert loaded.position(("steps", 0, "id")) == (3, 9)
    assert loaded.position(("steps", 0, "command")) == (4, 14)
    assert loaded.position(("steps", 0, "command"), key=True) == (4, 5)


def test_it_records_positions_inside_flow_mappings():
    loaded = load("outer: {alpha: 1, beta: {gamma: x}}\n")
    assert loaded.position(("outer", "alpha"), key=True) == (1, 9)
    assert loaded.position(("outer", "alpha")) == (1, 16)
    assert loaded.position(("outer", "beta"), key=True) == (1, 19)
    assert loaded.position(("outer", "beta", "gamma"), key=True) == (1, 26)
    assert loaded.position(("outer", "beta", "gamma")) == (1, 33)


def test_it_records_positions_inside_nested_lists():
    loaded = load("grid:\n  - - a\n    - b\n  - [c, [d]]\n")
    assert loaded.position(("grid", 0, 0)) == (2, 7)
    assert loaded.position(("grid", 0, 1)) == (3, 7)
    assert loaded.position(("grid", 1, 0)) == (4, 6)
    assert loaded.position(("grid", 1, 1, 0)) == (4, 10)


def test_the_position_of_the_root_is_the_first_line():
    assert load("# a comment\nname: wf\n").position(()) == (2, 1)


def test_a_utf8_byte_order_mark_is_accepted_and_does_not_shift_columns():
    loaded = load(b"\xef\xbb\xbfname: wf\n")
    assert loaded.value == {"name": "wf"}
    assert loaded.position(("name",)) == (1, 7)


# -- duplicate keys -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("document", "line", "column"), [
    ("name: a\nsteps: []\nname: b\n", 3, 1),
    ("steps:\n  - id: a\n    command: x\n    command: y\n", 4, 5),
    ("a:\n  b:\n    c:\n      d: 1\n      d: 2\n", 5, 7),
    ("a: {b: 1, b: 2}\n", 1, 11),
    ("a: [1, [2, {c: 1, c: 2}]]\n", 1, 19),
    ("? x\n: 1\n? x\n: 2\n", 3, 3),
])
def test_a_duplicate_key_at_any_level_is_a_yaml_error_at_the_second_key(document, line, column):
    problem = load_error(document)
    assert problem.code == "yaml_error"
    assert (problem.line, problem.column) == (line, column)
    assert "duplicate" in problem.message


def test_the_duplicate_key_message_names_the_key_and_its_first_line():
    problem = load_error("name: a\nsteps: []\nname: b\n")
    assert "'name'" in problem.message
    assert "line 1" in problem.message


def test_null_spelled_two_ways_is_the_same_key():
    assert load_error("~: 1\nnull: 2\n").code == "yaml_error"


# -- explicit tags ------------------------------------------------------------------------------------

@pytest.mark.parametrize("document", [
    "a: !!python/object/apply:os.system ['echo pwned']\n",
    "a: !!python/object:collections.OrderedDict {}\n",
    "a: !!python/name:os.system\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!set {x, y}\n",
    "a: !!str 1\n",
    "a: !!int '1'\n",
    "a: !!map {x: 1}\n",
    "a: !!seq [1]\n",
    "a: !local value\n",
    "a: !local {x: 1}\n",
    "a: !local [1, 2]\n",
    "a: !<tag:yaml.org,2002:str> x\n",
    "a: ! x\n",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!thing x\n",
    "!!str a: 1\n",
    "!!map\nname: wf\n",
    "a:\n  - !!str x\n",
])
def test_an_explicit_tag_of_any_kind_is_a_yaml_error(document):
    problem = load_error(document)
    assert problem.code == "yaml_error"
    assert "tag" in problem.message
    assert problem.line is not None and problem.column is not None


def test_the_tag_error_points_at_the_tagged_node():
    problem = load_error("name: wf\nsteps:\n  - id: a\n    command: !!python/object/apply:os.system [x]\n")
    assert (problem.line, problem.column) == (4, 14)


# -- documents and roots ------------------------------------------------------------------------------

@pytest.mark.parametrize("document", [
    "name: a\n---\nname: b\n",
    "---\nname: a\n---\nname: b\n",
    "name: a\n...\n---\nname: b\n",
    "name: a\n---\n",
])
def test_several_documents_in_one_file_are_a_yaml_error(document):
    assert load_error(document).code == "yaml_error"


def test_a_single_document_with_explicit_markers_loads():
    assert load("---\nname: wf\n...\n").value == {"name": "wf"}


@pytest.mark.parametrize("document", [
    "", "\n\n", "# only a comment\n# and another\n", "---\n", "~\n", "just text\n", "42\n", "'quoted'\n",
    "|\n  a block scalar\n", "- a\n- b\n", "[a, b]\n",
])
def test_a_document_whose_root_is_not_a_mapping_is_not_a_mapping(document):
    problem = load_error(document)
    assert problem.code == "not_a_mapping"
    assert "mapping" in problem.message


def test_a_list_root_is_reported_as_a_list():
    assert "list" in load_error("- a\n").message


# -- bytes -----------------------------------------------------------------------------------------------

def test_invalid_utf8_is_a_yaml_error_with_its_position():
    problem = load_error(b"name: wf\nsteps: \xff\xfe\n")
    assert problem.code == "yaml_error"
    assert "UTF-8" in problem.message
    assert (problem.line, problem.column) == (2, 8)


def test_an_overlong_utf8_encoding_is_a_yaml_error():
    assert load_error(b"name: \xc0\x80\n").code == "yaml_error"


def test_a_raw_control_character_is_a_yaml_error_pointing_at_it():
    problem = load_error(b"name: wf\nsteps: a\x07b\n")
    assert problem.code == "yaml_error"
    assert (problem.line, problem.column) == (2, 9)


# -- keys that are not plain values -------------------------------------------------------------------------

@pytest.mark.parametrize("document", ["? {a: 1}\n: x\n", "{a: 1}: x\n", "? [a]\n: x\n", "[a, b]: x\n"])
def test_a_mapping_or_list_used_as_a_key_is_a_yaml_error(document):
    problem = load_error(document)
    assert problem.code == "yaml_error"
    assert problem.line == 1


# -- aliases --------------------------------------------------------------------------------------------------

def test_an_alias_to_an_unknown_anchor_is_a_yaml_error_naming_it():
    problem = load_error("a: 1\nb: *missing\n")
    assert problem.code == "yaml_error"
    assert "missing" in problem.message
    assert problem.line == 2


def test_an_alias_to_its_own_unfinished_node_is_a_yaml_error():
    assert load_error("a: &self [1, *self]\n").code == "yaml_error"


def test_aliases_within_the_bound_load_and_share_their_value():
    loaded = load("base: &base {agent: mock, tags: [a, b]}\nfirst: *base\nsecond: *base\nword: &w hi\nagain: *w\n")
    value = loaded.value
    assert value["first"] == value["second"] == {"agent": "mock", "tags": ["a", "b"]}
    assert value["first"] is value["base"]
    assert value["again"] == "hi"
    assert loaded.position(("second",)) == (3, 9)


def test_ten_thousand_alias_nodes_are_within_the_bound():
    loaded = load("a: &a x\nb: [" + ", ".join(["*a"] * 10_000) + "]\n")
    assert len(loaded.value["b"]) == 10_000


def test_one_alias_node_past_ten_thousand_is_an_alias_limit():
    problem = load_error("a: &a x\nb: [" + ", ".join(["*a"] * 10_001) + "]\n")
    assert problem.code == "alias_limit"
    assert problem.line == 2


# -- nesting and size bounds ---------------------------------------------------------------------------------

def test_sixty_four_levels_of_nesting_are_within_the_bound():
    # The root mapping is level 1; 63 more lists make 64.
    assert load("v: " + "[" * 63 + "]" * 63 + "\n").value


def test_sixty_five_levels_of_nesting_are_too_deep():
    problem = load_error("v: " + "[" * 64 + "]" * 64 + "\n")
    assert problem.code == "too_deep"
    assert (problem.line, problem.column) == (1, 67)


def test_an_alias_that_pushes_nesting_past_the_bound_is_too_deep():
    deep = "[" * 40 + "x" + "]" * 40
    problem = load_error(f"a: &deep {deep}\nb: " + "[" * 40 + "*deep" + "]" * 40 + "\n")
    assert problem.code == "too_deep"
    assert problem.line == 2


def test_a_document_of_exactly_one_mebibyte_is_within_the_size_bound():
    head = b"name: wf\ndescription: "
    data = head + b"x" * (1_048_576 - len(head) - 1) + b"\n"
    assert len(data) == 1_048_576
    assert load(data).value["name"] == "wf"


def test_one_byte_over_a_mebibyte_is_too_large_with_no_position():
    head = b"name: wf\ndescription: "
    data = head + b"x" * (1_048_577 - len(head))
    problem = load_error(data)
    assert problem.code == "too_large"
    assert (problem.line, problem.column) == (None, None)
    assert "1,048,577" in problem.message
