"""Each patch op on small documents: the exact resulting text, byte for byte, and its changes."""

from __future__ import annotations

import pytest

from engine.edit import PatchError, apply_patch
from engine.validation import validate_source

DOC = """\
# A commented workflow
name: wf
steps:
  - id: fetch   # gets the data
    agent: shell
    command: "curl -s https://example.com"
    retry: {max_retries: 2}

  # the report step
  - id: report
    agent: shell
    command: |
      echo report
    depends_on: [fetch]
"""


def apply(text: str, op: dict) -> str:
    result = apply_patch(text, op)
    assert replay(text, result.changes) == result.text  # the changes turn the old text into the new one
    return result.text


def replay(text: str, changes: list[dict]) -> str:
    """Apply CodeMirror changes (UTF-16 offsets of the old text) as the page does."""
    units = text.encode("utf-16-le")
    out, index = [], 0
    for change in changes:
        assert change["from"] >= index and change["to"] >= change["from"]  # sorted, not overlapping
        out.append(units[index * 2:change["from"] * 2].decode("utf-16-le"))
        out.append(change["insert"])
        index = change["to"]
    out.append(units[index * 2:].decode("utf-16-le"))
    return "".join(out)


def test_no_op_patches_give_identical_text():
    assert apply(DOC, {"op": "edge.add", "from": "fetch", "to": "report"}) == DOC
    assert apply(DOC, {"op": "field.unset", "id": "fetch", "path": ["timeout"]}) == DOC
    assert apply(DOC, {"op": "step.rename", "id": "fetch", "to": "fetch"}) == DOC


def test_field_set_replaces_only_the_scalar_and_keeps_flow_style():
    result = apply_patch(DOC, {"op": "field.set", "id": "fetch", "path": ["retry", "max_retries"], "value": 5})
    assert result.text == DOC.replace("{max_retries: 2}", "{max_retries: 5}")
    assert result.changes == [{"from": DOC.index("2}"), "to": DOC.index("2}") + 1, "insert": "5"}]


def test_field_set_keeps_the_quoting_of_the_old_value():
    text = apply(DOC, {"op": "field.set", "id": "fetch", "path": ["command"], "value": "curl -s https://x.org"})
    assert text == DOC.replace('"curl -s https://example.com"', '"curl -s https://x.org"')


def test_field_set_keeps_a_block_scalar_a_block_scalar():
    text = apply(DOC, {"op": "field.set", "id": "report", "path": ["command"], "value": "echo one\necho two\n"})
    assert text == DOC.replace("      echo report\n", "      echo one\n      echo two\n")


def test_field_set_adds_a_missing_nested_field_at_the_end_of_the_step():
    text = apply(DOC, {"op": "field.set", "id": "report", "path": ["outputs", "total", "type"],
                       "value": "number"})
    assert text == DOC + "    outputs:\n      total:\n        type: number\n"


def test_field_set_into_a_flow_mapping_stays_on_its_line():
    text = apply(DOC, {"op": "field.set", "id": "fetch", "path": ["retry", "backoff_s"], "value": 1.5})
    assert text == DOC.replace("{max_retries: 2}", "{max_retries: 2, backoff_s: 1.5}")


def test_field_set_of_a_document_field_goes_above_the_steps():
    text = apply(DOC, {"op": "field.set", "id": None, "path": ["description"], "value": "Fetch: then report"})
    assert text == DOC.replace("name: wf\n", "name: wf\ndescription: 'Fetch: then report'\n")


def test_field_set_a_list_value_in_block_style():
    text = apply(DOC, {"op": "field.set", "id": "fetch", "path": ["success_criteria"],
                       "value": ["output != ''", "outputs.code == 200"]})
    assert text == DOC.replace("    retry: {max_retries: 2}\n", "    retry: {max_retries: 2}\n"
                               "    success_criteria:\n      - output != ''\n      - outputs.code == 200\n")
    assert validate_source(text).valid


def test_field_unset_removes_the_key_and_its_lines_only():
    text = apply(DOC, {"op": "field.unset", "id": "fetch", "path": ["retry"]})
    assert text == DOC.replace("    retry: {max_retries: 2}\n", "")
    text = apply(DOC, {"op": "field.unset", "id": "fetch", "path": ["retry", "max_retries"]})
    assert text == DOC.replace("{max_retries: 2}", "{}")


def test_step_add_after_a_step_follows_the_files_indentation_and_blank_lines():
    text = apply(DOC, {"op": "step.add", "after": "fetch",
                       "step": {"id": "clean", "agent": "shell", "command": "tr -d x", "depends_on": ["fetch"]}})
    assert text == DOC.replace(
        "    retry: {max_retries: 2}\n",
        "    retry: {max_retries: 2}\n\n  - id: clean\n    agent: shell\n    command: tr -d x\n"
        "    depends_on:\n      - fetch\n")
    assert validate_source(text).valid


def test_step_add_at_the_end_and_the_id_first():
    text = apply(DOC, {"op": "step.add", "after": None, "step": {"agent": "mock", "command": "x", "id": "z"}})
    assert text == DOC + "\n  - id: z\n    agent: mock\n    command: x\n"


def test_step_add_follows_an_unindented_list():
    text = "name: wf\nsteps:\n- id: a\n  agent: mock\n  command: a\n"
    assert apply(text, {"op": "step.add", "after": "a", "step": {"id": "b", "agent": "mock", "command": "b"}}) == \
        text + "- id: b\n  agent: mock\n  command: b\n"


def test_step_add_to_a_document_without_steps():
    assert apply("name: wf\n", {"op": "step.add", "after": None, "step": {"id": "a", "agent": "mock",
                                                                         "command": "x"}}) == \
        "name: wf\nsteps:\n  - id: a\n    agent: mock\n    command: x\n"
    assert apply("name: wf\nsteps: []\n", {"op": "step.add", "after": None,
                                            "step": {"id": "a", "agent": "mock", "command": "x"}}) == \
        "name: wf\nsteps:\n  - id: a\n    agent: mock\n    command: x\n"


def test_step_remove_takes_its_comments_and_its_references():
    text = apply(DOC, {"op": "step.remove", "id": "report"})
    assert text == DOC[:DOC.index("\n  # the report step")]
    text = apply(DOC, {"op": "step.remove", "id": "fetch"})
    assert text == "# A commented workflow\nname: wf\nsteps:\n  # the report step\n  - id: report\n" \
        "    agent: shell\n    command: |\n      echo report\n"


def test_step_remove_keeps_the_other_dependencies_in_a_block_list():
    text = "name: wf\nsteps:\n  - id: a\n    command: a\n  - id: b\n    command: b\n  - id: c\n" \
        "    command: c\n    depends_on:\n      - a\n      - b   # b too\n"
    assert apply(text, {"op": "step.remove", "id": "a"}) == \
        "name: wf\nsteps:\n  - id: b\n    command: b\n  - id: c\n    command: c\n    depends_on:\n" \
        "      - b   # b too\n"


FOUR = "name: wf\nsteps:\n  - id: a\n    command: a\n\n  - id: b\n    command: b\n  # c's note\n  - id: c\n" \
    "    command: c\n  - id: d\n    command: d\n    depends_on: [a, b, c]   # all three\n"


def test_selection_remove_takes_several_steps_and_their_references_in_one_patch():
    assert apply(FOUR, {"op": "selection.remove", "ids": ["c", "a"]}) == \
        "name: wf\nsteps:\n  - id: b\n    command: b\n  - id: d\n    command: d\n    depends_on: [b]   # all three\n"
    # neighbours at the end go with the blank lines before them; the last reference takes its key
    assert apply(FOUR, {"op": "selection.remove", "ids": ["b", "c", "d"]}) == \
        "name: wf\nsteps:\n  - id: a\n    command: a\n"
    assert apply(FOUR, {"op": "selection.remove", "ids": ["a", "b", "c"]}) == \
        "name: wf\nsteps:\n  - id: d\n    command: d\n"
    assert apply(FOUR, {"op": "selection.remove", "ids": ["d", "c", "b", "a"]}) == "name: wf\nsteps: []\n"
    flow = "name: wf\nsteps: [{id: a, command: a}, {id: b, command: b}, {id: c, command: c, depends_on: [a]}]\n"
    assert apply(flow, {"op": "selection.remove", "ids": ["a", "b"]}) == "name: wf\nsteps: [{id: c, command: c}]\n"


@pytest.mark.parametrize("ids, code", [([], "bad_patch"), ("a", "bad_patch"), (["a", 1], "bad_patch"),
                                        (["a", "nope"], "unknown_step"), ([["a"]], "bad_patch")])
def test_selection_remove_refuses_a_bad_list_and_changes_nothing(ids, code):
    with pytest.raises(PatchError) as refused:
        apply_patch(FOUR, {"op": "selection.remove", "ids": ids})
    assert refused.value.code == code


def test_selection_remove_of_steps_that_share_an_anchor_expands_it_only_for_the_steps_that_stay():
    text = "name: wf\nsteps:\n  - id: a\n    command: &c run it\n  - id: b\n    command: *c\n" \
        "  - id: c\n    command: *c\n"
    assert apply(text, {"op": "selection.remove", "ids": ["a", "b"]}) == \
        "name: wf\nsteps:\n  - id: c\n    command: run it\n"


def test_edge_add_appends_to_an_existing_list_or_creates_one():
    text = "name: wf\nsteps:\n  - id: a\n    command: a\n  - id: b\n    command: b\n" \
        "  - id: c\n    command: c\n    depends_on: [a]\n"
    assert apply(text, {"op": "edge.add", "from": "b", "to": "c"}) == text.replace("[a]", "[a, b]")
    assert apply(text, {"op": "edge.add", "from": "a", "to": "b"}) == \
        text.replace("    command: b\n", "    command: b\n    depends_on: [a]\n")


def test_edge_add_writes_a_block_list_when_the_file_uses_them():
    text = "name: wf\nsteps:\n  - id: a\n    command: a\n  - id: b\n    command: b\n    depends_on:\n" \
        "      - a\n  - id: c\n    command: c\n"
    assert apply(text, {"op": "edge.add", "from": "b", "to": "c"}) == text + "    depends_on:\n      - b\n"
    assert apply(text, {"op": "edge.add", "from": "c", "to": "b"}) == \
        text.replace("      - a\n", "      - a\n      - c\n")


def test_edge_remove_of_the_last_dependency_removes_the_key():
    assert apply(DOC, {"op": "edge.remove", "from": "fetch", "to": "report"}) == \
        DOC.replace("    depends_on: [fetch]\n", "")


SEQ = """\
name: wf
sequential: true
steps:
  - id: a
    command: a
  - id: b
    command: b
  - id: c
    command: c
"""


def test_sequential_edge_add_keeps_the_chain():
    text = apply(SEQ, {"op": "edge.add", "from": "a", "to": "c"})
    assert text == SEQ + "    depends_on: [b, a]\n"
    # an implied edge drawn again becomes explicit: the text says what the graph shows
    assert apply(SEQ, {"op": "edge.add", "from": "b", "to": "c"}) == SEQ + "    depends_on: [b]\n"
    # the first step has no previous step: only the new edge
    text = apply(SEQ, {"op": "step.add", "after": "c", "step": {"id": "d", "command": "d"}})
    assert apply(text, {"op": "edge.add", "from": "a", "to": "d"}) == text + "    depends_on: [c, a]\n"


def test_sequential_edge_remove_leaves_an_empty_list_not_the_chain():
    text = apply(SEQ, {"op": "edge.add", "from": "a", "to": "c"})
    text = apply(text, {"op": "edge.remove", "from": "b", "to": "c"})
    text = apply(text, {"op": "edge.remove", "from": "a", "to": "c"})
    assert text == SEQ + "    depends_on: []\n"


@pytest.mark.parametrize("op, code", [
    ({"op": "step.explode", "id": "fetch"}, "bad_patch"),
    ({"id": "fetch"}, "bad_patch"),
    ({"op": "step.remove", "id": "fetch", "also": 1}, "bad_patch"),
    ({"op": "step.remove"}, "bad_patch"),
    ("step.remove", "bad_patch"),
    ({"op": "step.remove", "id": "nope"}, "unknown_step"),
    ({"op": "step.remove", "id": 7}, "bad_patch"),
    ({"op": "step.add", "step": {"id": "Bad-Id"}}, "bad_id"),
    ({"op": "step.add", "step": {"id": "loop"}}, "bad_id"),
    ({"op": "step.add", "step": {"agent": "mock"}}, "bad_id"),
    ({"op": "step.add", "step": {"id": "fetch"}}, "duplicate_id"),
    ({"op": "step.add", "step": "fetch"}, "bad_patch"),
    ({"op": "step.add", "step": {"id": "x"}, "after": "nope"}, "unknown_step"),
    ({"op": "step.rename", "id": "fetch", "to": "x" * 65}, "bad_id"),
    ({"op": "step.rename", "id": "fetch", "to": "report"}, "duplicate_id"),
    ({"op": "step.rename", "id": "nope", "to": "x"}, "unknown_step"),
    ({"op": "edge.add", "from": "report", "to": "fetch"}, "cycle"),
    ({"op": "edge.add", "from": "fetch", "to": "fetch"}, "self_edge"),
    ({"op": "edge.add", "from": "nope", "to": "fetch"}, "unknown_step"),
    ({"op": "edge.remove", "from": "report", "to": "fetch"}, "bad_patch"),
    ({"op": "field.set", "id": "fetch", "path": ["id"], "value": "x"}, "use_rename"),
    ({"op": "field.set", "id": "fetch", "path": [], "value": 1}, "bad_path"),
    ({"op": "field.set", "id": "fetch", "path": [True], "value": 1}, "bad_path"),
    ({"op": "field.set", "id": "fetch", "path": ["agent", "deeper"], "value": 1}, "bad_path"),
    ({"op": "field.set", "id": None, "path": ["steps"], "value": []}, "bad_path"),
    ({"op": "field.set", "id": "report", "path": ["depends_on", 5], "value": "x"}, "bad_path"),
    ({"op": "field.set", "id": "report", "path": ["depends_on", "x"], "value": "x"}, "bad_path"),
    ({"op": "field.set", "id": "report", "path": [0], "value": "x"}, "bad_path"),
    ({"op": "field.unset", "id": "report", "path": "depends_on"}, "bad_path"),
    ({"op": "field.set", "id": "fetch", "path": ["timeout"], "value": float("nan")}, "bad_value"),
    ({"op": "field.set", "id": "fetch", "path": ["timeout"], "value": {1: 2}}, "bad_value"),
    ({"op": "field.set", "id": "fetch", "path": ["timeout"], "value": object()}, "bad_value"),
    ({"op": "field.set", "id": "fetch", "path": ["x-a"], "value": "a\x00b"}, "bad_value"),
    ({"op": "field.set", "id": "nope", "path": ["agent"], "value": "x"}, "unknown_step"),
    ({"op": "selection.paste", "yaml": "- agent: mock\n"}, "bad_id"),
    ({"op": "selection.paste", "yaml": "just words"}, "bad_patch"),
    ({"op": "selection.paste", "yaml": "- id: [\n"}, "not_parsed"),
    ({"op": "selection.paste", "yaml": 5}, "bad_patch"),
])
def test_bad_patches_are_refused_with_their_code(op, code):
    with pytest.raises(PatchError) as caught:
        apply_patch(DOC, op)
    assert caught.value.code == code, caught.value.message
    assert caught.value.message


def test_a_value_that_makes_the_text_too_large_is_refused_as_too_large():
    with pytest.raises(PatchError) as caught:
        apply_patch(DOC, {"op": "field.set", "id": "fetch", "path": ["command"], "value": "x" * 1_100_000})
    assert caught.value.code == "too_large"


def test_rename_says_what_it_renamed():
    assert apply_patch(DOC, {"op": "step.rename", "id": "fetch", "to": "get"}).renamed == {"fetch": "get"}


def test_a_deep_value_is_refused():
    value: list = []
    for _ in range(100):
        value = [value]
    with pytest.raises(PatchError) as caught:
        apply_patch(DOC, {"op": "field.set", "id": "fetch", "path": ["x-deep"], "value": value})
    assert caught.value.code == "bad_value"


def test_the_implicit_edge_error_says_where_it_comes_from():
    text = DOC.replace("echo report", "echo ${fetch.stdout}").replace("    depends_on: [fetch]\n",
                                                                     "    stdin: $fetch.stdout\n")
    with pytest.raises(PatchError) as caught:
        apply_patch(text, {"op": "edge.remove", "from": "fetch", "to": "report"})
    assert caught.value.code == "implicit_edge"
    assert "`command`" in caught.value.message and "`stdin`" in caught.value.message
    with pytest.raises(PatchError) as caught:
        apply_patch(SEQ, {"op": "edge.remove", "from": "a", "to": "b"})
    assert caught.value.code == "implicit_edge" and "sequential" in caught.value.message


@pytest.mark.parametrize("text, code", [
    ("name: [\n", "not_parsed"),
    ("- a\n- b\n", "not_parsed"),
    ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n", "not_parsed"),
    ("a: " + "[" * 200 + "]" * 200 + "\n", "not_parsed"),
    ("name: wf\nx-pad: '" + "x" * (20 * 1024 * 1024) + "'\n", "too_large"),
])
def test_text_outside_the_loaders_bounds_is_refused(text, code):
    with pytest.raises(PatchError) as caught:
        apply_patch(text, {"op": "field.set", "id": None, "path": ["description"], "value": "x"})
    assert caught.value.code == code


def test_an_anchored_one_line_step_gets_its_new_field_inside_its_braces_and_keeps_its_anchor():
    text = "name: wf\nsteps:\n  - &first {id: a, command: x}\n  - &second {id: b, command: y}\n"
    result = apply_patch(text, {"op": "edge.add", "from": "a", "to": "b"})
    assert result.text == text.replace("command: y}", "command: y, depends_on: [a]}")
