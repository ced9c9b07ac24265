"""copy_steps, selection.paste and step.duplicate: the steps' own text, ids renamed on collision, references
among the pasted steps remapped."""

from __future__ import annotations

import pytest

from engine.edit import PatchError, apply_patch, copy_steps, outline, spans
from engine.edit.pasting import MAX_PASTE_STEPS
from engine.validation import validate_source
from tests.engine.edit.test_patches import apply

DOC = """\
name: wf
x-defaults: &r {max_retries: 2}
steps:
  # the first
  - id: a   # first
    agent: shell
    command: "echo ${b.outputs.x}"
    retry: *r

  - id: b
    agent: shell
    command: |
      echo ${a.outputs.y}
    depends_on: [a]
"""


def test_copy_gives_the_steps_own_lines_at_column_zero_with_outside_aliases_written_out():
    assert copy_steps(DOC, ["b", "a"]) == """\
# the first
- id: a   # first
  agent: shell
  command: "echo ${b.outputs.x}"
  retry: {max_retries: 2}
- id: b
  agent: shell
  command: |
    echo ${a.outputs.y}
  depends_on: [a]
"""


def test_copy_of_an_unknown_step_is_refused():
    with pytest.raises(PatchError) as caught:
        copy_steps(DOC, ["a", "nope"])
    assert caught.value.code == "unknown_step"
    with pytest.raises(PatchError) as caught:
        copy_steps(DOC, [])
    assert caught.value.code == "bad_patch"


def test_paste_into_the_same_workflow_renames_and_remaps():
    result = apply_patch(DOC, {"op": "selection.paste", "yaml": copy_steps(DOC, ["a", "b"]), "after": "b"})
    assert result.renamed == {"a": "a_2", "b": "b_2"}
    assert result.text == DOC + """
  # the first
  - id: a_2   # first
    agent: shell
    command: "echo ${b_2.outputs.x}"
    retry: {max_retries: 2}
  - id: b_2
    agent: shell
    command: |
      echo ${a_2.outputs.y}
    depends_on: [a_2]
"""


def test_paste_of_one_step_keeps_references_to_steps_outside_the_selection():
    text = apply(DOC, {"op": "selection.paste", "yaml": copy_steps(DOC, ["b"]), "after": "a"})
    assert text == DOC.replace("\n  - id: b\n", """
  - id: b_2
    agent: shell
    command: |
      echo ${a.outputs.y}
    depends_on: [a]

  - id: b
""")


def test_paste_into_another_workflow_keeps_free_ids_and_drops_anchors():
    other = "name: other\nsteps:\n- id: x\n  agent: mock\n  command: x\n"
    pasted = "- id: a\n  agent: mock\n  command: &c hi ${x.stdout}\n- id: b\n  agent: mock\n  command: *c\n"
    result = apply_patch(other, {"op": "selection.paste", "yaml": pasted, "after": None})
    assert result.renamed == {}
    assert result.text == other + "- id: a\n  agent: mock\n  command: hi ${x.stdout}\n- id: b\n  agent: mock\n" \
        "  command: hi ${x.stdout}\n"
    assert validate_source(result.text).valid


def test_paste_of_one_mapping_and_of_an_indented_list():
    one = apply(DOC, {"op": "selection.paste", "yaml": "id: a\nagent: mock\ncommand: ${a.stdout}\n", "after": None})
    assert one == DOC + "\n  - id: a_2\n    agent: mock\n    command: ${a_2.stdout}\n"
    indented = apply(DOC, {"op": "selection.paste", "yaml": "    - id: c\n      agent: mock\n      command: c\n",
                           "after": None})
    assert indented == DOC + "\n  - id: c\n    agent: mock\n    command: c\n"


def test_paste_collisions_among_the_pasted_steps_themselves():
    result = apply_patch(DOC, {"op": "selection.paste", "after": None, "yaml":
                               "- id: c\n  command: c\n- id: c\n  command: again\n  depends_on: [c]\n"})
    assert result.renamed == {"c": "c_2"}
    assert result.text == DOC + "\n  - id: c\n    command: c\n  - id: c_2\n    command: again\n    depends_on: [c]\n"


def test_duplicate_inserts_a_copy_after_the_step_with_a_fresh_id():
    text = apply(DOC, {"op": "step.duplicate", "id": "b"})
    assert text == DOC + "\n  - id: b_copy\n    agent: shell\n    command: |\n      echo ${a.outputs.y}\n" \
        "    depends_on: [a]\n"
    again = apply(text, {"op": "step.duplicate", "id": "b"})
    assert "  - id: b_copy_2\n" in again and again.index("b_copy_2") < again.index("id: b_copy\n")


@pytest.mark.parametrize("space", ["\xa0", "\u3000", "\u2003"])
def test_a_line_of_unicode_space_is_content_when_copied_pasted_and_duplicated(space):
    """YAML's white space is the space and the tab: a block scalar's line holding only U+00A0 (or another Unicode
    space) is text, indented with the rest, not a blank line left at column 0."""
    text = f"name: wf\nsteps:\n  - id: a\n    agent: shell\n    command: |2-\n\n      {space}\n"
    copied = copy_steps(text, ["a"])
    assert copied == f"- id: a\n  agent: shell\n  command: |2-\n\n    {space}\n"
    pasted = apply(text, {"op": "selection.paste", "yaml": copied, "after": "a"})
    assert pasted == text + text[text.index("  - id: a"):].replace("id: a", "id: a_2")
    duplicated = apply(text, {"op": "step.duplicate", "id": "a"})
    assert duplicated == text + text[text.index("  - id: a"):].replace("id: a", "id: a_copy")


def test_duplicate_of_a_self_referring_step_points_the_copy_at_itself():
    text = "name: wf\nsteps:\n  - id: a\n    agent: mock\n    command: x\n    loop:\n      max_iterations: 2\n" \
        "      until: \"a.outputs.done == true\"\n"
    assert apply(text, {"op": "step.duplicate", "id": "a"}) == text + text[text.index("  - id: a"):].replace(
        "id: a", "id: a_copy").replace("a.outputs", "a_copy.outputs")


def test_pasting_steps_that_share_an_anchored_list_renames_the_ids_in_the_alias_copy_too():
    text = ("name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: y\n    depends_on: &deps [a]\n"
            "  - id: c\n    command: z\n    depends_on: *deps\n")
    copied = copy_steps(text, ["a", "b", "c"])
    result = apply_patch(text, {"op": "selection.paste", "yaml": copied, "after": None})
    assert result.renamed == {"a": "a_2", "b": "b_2", "c": "c_2"}
    assert result.text == text + ("  - id: a_2\n    command: x\n  - id: b_2\n    command: y\n"
                                  "    depends_on: [a_2]\n  - id: c_2\n    command: z\n    depends_on: [a_2]\n")


def test_a_step_pasted_after_one_ending_with_a_keep_block_scalar_leaves_it_its_blank_lines():
    text = ("name: wf\nsteps:\n  - id: a\n    command: x\n  - id: kept\n    command: |+\n      printf 'k'\n\n"
            "  - id: c\n    command: z\n")
    result = apply_patch(text, {"op": "selection.paste", "yaml": "- id: n\n  command: y\n", "after": "kept"})
    assert result.text == text.replace("\n\n  - id: c\n", "\n\n  - id: n\n    command: y\n  - id: c\n")


def test_a_paste_into_a_one_line_list_of_steps_keeps_the_list_one_line_without_the_pasted_comments():
    # Decided: the document's one-line list stays one line (its steps' bytes untouched); the pasted steps'
    # comments cannot stand inside it and are not kept. Rewriting the list as a block would rewrite every step.
    text = "name: wf\nsteps: [{id: a, command: x}]   # one line\n"
    result = apply_patch(text, {"op": "selection.paste", "yaml": "# first\n- id: b   # bee\n  command: y\n",
                                "after": None})
    assert result.text == "name: wf\nsteps: [{id: a, command: x}, {id: b, command: y}]   # one line\n"


def pasted_steps(n: int) -> str:
    return "".join(f"- id: p{i}\n  agent: mock\n  command: x\n" for i in range(n))


def test_a_paste_of_more_steps_than_the_limit_is_refused_naming_the_limit_and_the_count(monkeypatch):
    built = []
    monkeypatch.setattr(spans, "build", lambda text, build=spans.build: built.append(text) or build(text))
    with pytest.raises(PatchError) as caught:
        apply_patch(DOC, {"op": "selection.paste", "yaml": pasted_steps(3000), "after": None})
    assert caught.value.code == "too_large"
    assert built == [DOC]  # the document's node tree only: the pasted text's was not built to be refused
    monkeypatch.undo()
    assert f"at most {MAX_PASTE_STEPS:,} steps" in caught.value.message and "3,000" in caught.value.message
    result = apply_patch(DOC, {"op": "selection.paste", "yaml": pasted_steps(MAX_PASTE_STEPS), "after": None})
    assert [s["id"] for s in outline(result.text)["steps"]][-2:] == [f"p{MAX_PASTE_STEPS - 2}",
                                                                     f"p{MAX_PASTE_STEPS - 1}"]
    assert len(outline(result.text)["steps"]) == 2 + MAX_PASTE_STEPS


@pytest.mark.parametrize("steps", ["[{id: a, command: x}, {id: b, command: y}]", "&s [{id: a, command: x}]",
                                   "&s  # the list\n  [{id: a, command: x}]", "*s", "[]", "", "{id: a}"])
def test_copy_from_a_document_without_a_block_list_of_steps_is_refused_before_its_node_tree_is_built(
        monkeypatch, steps):
    anchored = "x-s: &t" if steps.startswith("&s") else "x-s: &s"  # one anchor of each name
    text = f"name: wf\n{anchored} [{{id: a, command: x}}]\nsteps: {steps}\n"
    monkeypatch.setattr(spans, "build", lambda text: pytest.fail("the node tree was built"))
    with pytest.raises(PatchError) as caught:
        copy_steps(text, ["a"])
    assert (caught.value.code, caught.value.message) == (
        "unknown_step", "the document has no block list of steps to copy from")


@pytest.mark.parametrize("steps", ["\n  - id: a\n    command: x", " &s\n  - id: a\n    command: x",
                                   " &s   # the list\n\n  - id: a\n    command: x"])
def test_copy_from_a_block_list_of_steps_however_it_starts(steps):
    assert copy_steps(f"name: wf\nsteps:{steps}\n", ["a"]) == "- id: a\n  command: x\n"


def test_many_pasted_steps_of_one_taken_id_get_the_next_free_ids_without_counting_from_the_start():
    from engine.edit.pasting import fresh_id

    text = "name: wf\nsteps:\n  - id: x\n    command: a\n  - id: x_2\n    command: b\n  - id: x_4\n    command: c\n"
    result = apply_patch(text, {"op": "selection.paste", "after": None, "yaml": "- id: x\n- id: x\n- id: x\n"})
    assert result.text == text + "  - id: x_3\n  - id: x_5\n  - id: x_6\n"

    class Counted(set):
        asked = 0

        def __contains__(self, item):
            Counted.asked += 1
            return super().__contains__(item)

    taken, tried = Counted({"x", *(f"x_{n}" for n in range(2, 1000))}), {}
    for _ in range(100):
        taken.add(fresh_id("x", taken, "", tried))
    assert Counted.asked == 998 + 100  # the taken ones once, then one free id each


def test_copy_refuses_what_it_cannot_handle_instead_of_raising(monkeypatch):
    # copy has its own endpoint: an unforeseen corner of a hostile text is a bad_patch there, as in apply_patch
    from engine.edit import pasting

    def broken(*args):
        raise IndexError("string index out of range")

    monkeypatch.setattr(pasting, "_dedent", broken)
    with pytest.raises(PatchError) as refused:
        copy_steps(DOC, ["a"])
    assert refused.value.code == "bad_patch" and "IndexError" in refused.value.message
