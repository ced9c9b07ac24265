"""What a patch keeps: a BOM, CRLF line endings, UTF-16 offsets past an emoji, anchors and their aliases."""

from __future__ import annotations

from pathlib import Path

from engine.edit import apply_patch, copy_steps
from engine.validation import validate_source
from engine.yamlload import load
from tests.engine.edit.test_patches import apply

CRLF = ("\ufeff# top\r\nname: wf\r\nsteps:\r\n  - id: a  # é😀\r\n    agent: shell\r\n"
        "    command: echo 😀 ${b.outputs.x}\r\n  - id: b\r\n    agent: shell\r\n    command: |\r\n"
        "      echo b\r\n    depends_on: [a]\r\n")


def test_rename_keeps_the_bom_and_crlf_and_counts_utf16_units():
    result = apply_patch(CRLF.replace("${b.outputs.x}", "x"), {"op": "step.rename", "id": "a", "to": "first"})
    assert result.text == CRLF.replace("${b.outputs.x}", "x").replace("id: a ", "id: first ").replace(
        "[a]", "[first]")
    # after the BOM (1 unit) and the emoji (2 units): JavaScript string indexes
    js = "\ufeff# top\r\nname: wf\r\nsteps:\r\n  - id: ".encode("utf-16-le")
    assert result.changes[0] == {"from": len(js) // 2, "to": len(js) // 2 + 1, "insert": "first"}
    before_last = CRLF.replace("${b.outputs.x}", "x")[:CRLF.replace("${b.outputs.x}", "x").index("[a]") + 1]
    assert result.changes[1]["from"] == len(before_last.encode("utf-16-le")) // 2


def test_a_new_block_uses_crlf_in_a_crlf_file():
    text = apply(CRLF, {"op": "field.set", "id": "b", "path": ["command"], "value": "echo c\nd"})
    assert text == CRLF.replace("|\r\n      echo b\r\n", "|-\r\n      echo c\r\n      d\r\n")
    text = apply(CRLF, {"op": "step.duplicate", "id": "b"})
    assert text == CRLF + "  - id: b_copy\r\n    agent: shell\r\n    command: |\r\n      echo b\r\n" \
        "    depends_on: [a]\r\n"
    text = apply(CRLF, {"op": "selection.paste", "yaml": copy_steps(CRLF, ["a", "b"]), "after": "a"})
    assert text == CRLF.replace(
        "  - id: b\r\n",
        "  - id: a_2  # é😀\r\n    agent: shell\r\n    command: echo 😀 ${b_2.outputs.x}\r\n  - id: b_2\r\n"
        "    agent: shell\r\n    command: |\r\n      echo b\r\n    depends_on: [a_2]\r\n  - id: b\r\n", 1)
    assert "\n" not in text.replace("\r\n", "")


def test_field_unset_in_a_crlf_file():
    assert apply(CRLF, {"op": "field.unset", "id": "b", "path": ["depends_on"]}) == \
        CRLF.replace("    depends_on: [a]\r\n", "")


ANCHORS = """\
name: wf
steps:
  - id: a
    agent: mock
    command: a
    retry: &r
      max_retries: 2
      backoff_s: 1
  - id: b
    agent: mock
    command: b
    retry: *r
  - id: c
    agent: mock
    command: c
    retry: *r
"""
EXPANDED = "    retry:\n      max_retries: 2\n      backoff_s: 1\n"


def test_setting_a_field_through_an_alias_changes_that_step_only():
    text = apply(ANCHORS, {"op": "field.set", "id": "b", "path": ["retry", "max_retries"], "value": 5})
    assert text == ANCHORS.replace("    command: b\n    retry: *r\n",
                                   "    command: b\n    retry:\n      max_retries: 5\n      backoff_s: 1\n")
    report = validate_source(text)
    assert report.valid
    retries = {s.id: s.model.retry.max_retries for s in report.workflow.steps}
    assert retries == {"a": 2, "b": 5, "c": 2}


def test_setting_a_field_of_the_anchor_holder_expands_the_other_users_first():
    text = apply(ANCHORS, {"op": "field.set", "id": "a", "path": ["retry", "max_retries"], "value": 5})
    assert text == ANCHORS.replace("max_retries: 2", "max_retries: 5").replace("    retry: *r\n", EXPANDED)
    retries = {s.id: s.model.retry.max_retries for s in validate_source(text).workflow.steps}
    assert retries == {"a": 5, "b": 2, "c": 2}


def test_removing_the_anchor_holder_expands_its_aliases_first():
    text = apply(ANCHORS, {"op": "step.remove", "id": "a"})
    assert text == "name: wf\nsteps:\n" + ANCHORS[ANCHORS.index("  - id: b"):].replace("    retry: *r\n", EXPANDED)


def test_unsetting_a_field_through_an_alias():
    text = apply(ANCHORS, {"op": "field.unset", "id": "c", "path": ["retry", "backoff_s"]})
    assert text == ANCHORS[:ANCHORS.rindex("    retry: *r")] + "    retry:\n      max_retries: 2\n"


def test_a_one_line_anchor_is_written_out_on_one_line():
    text = "name: wf\nx-retry: &r {max_retries: 2}\nsteps:\n  - id: a\n    command: a\n    retry: *r\n" \
        "  - id: b\n    command: b\n    retry: *r\n"
    assert apply(text, {"op": "field.set", "id": "a", "path": ["retry", "max_retries"], "value": 3}) == \
        text.replace("    command: a\n    retry: *r\n", "    command: a\n    retry:\n      max_retries: 3\n")
    assert apply(text, {"op": "field.unset", "id": None, "path": ["x-retry"]}) == \
        text.replace("x-retry: &r {max_retries: 2}\n", "").replace("*r", "{max_retries: 2}")


def test_comments_quoting_and_flow_style_of_untouched_nodes_stay():
    text = """\
name: wf   # the name
steps:
  - id: a
    agent: 'mock'          # quoted
    command: >-
      folded
      text
    outputs: {x: {type: string}, "y z": {type: number}}
    # a comment between keys
    success_criteria: ["outputs.x != ''"]
"""
    new = apply(text, {"op": "field.set", "id": "a", "path": ["agent"], "value": "shell"})
    assert new == text.replace("'mock'", "'shell'")
    new = apply(text, {"op": "field.set", "id": "a", "path": ["timeout"], "value": "5m"})
    assert new == text + "    timeout: 5m\n"


def test_appending_after_a_block_scalar_that_ends_the_file_without_a_newline_keeps_its_value():
    text = "name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: |\n      y"
    assert apply(text, {"op": "step.add", "after": None, "step": {"id": "c", "command": "z"}}) == \
        "name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: |-\n      y\n  - id: c\n    command: z\n"
    assert copy_steps(text, ["b"]) == "- id: b\n  command: |-\n    y\n"
    assert apply(text, {"op": "field.set", "id": "a", "path": ["agent"], "value": "mock"}) == \
        text.replace("command: x", "command: x\n    agent: mock")


def test_a_key_keeps_its_quotes_and_an_explicit_key_its_question_mark():
    text = "name: wf\nvariables:\n  ? explicit key\n  : explicit value\n  \"quoted\": 1\nsteps:\n  - id: a\n" \
        "    command: x\n"
    assert apply(text, {"op": "field.set", "id": None, "path": ["variables", "explicit key"], "value": []}) == \
        text.replace(": explicit value", ": []")
    assert apply(text, {"op": "field.set", "id": None, "path": ["variables", "quoted"], "value": {"a": 1}}) == \
        text.replace('  "quoted": 1\n', '  "quoted":\n    a: 1\n')
    assert apply(text, {"op": "field.unset", "id": None, "path": ["variables", "explicit key"]}) == \
        text.replace("  ? explicit key\n  : explicit value\n", "")


def test_an_end_of_line_comment_moves_to_the_key_when_its_value_becomes_a_block():
    text = "name: wf\nsteps:\n  - id: a\n    command: &c x\n  - id: b\n    command: *c   # shared\n"
    assert apply(text, {"op": "field.set", "id": "b", "path": ["command"], "value": "one\ntwo"}) == \
        "name: wf\nsteps:\n  - id: a\n    command: &c x\n  - id: b\n    command: |-  # shared\n      one\n      two\n"


def test_a_value_ruamel_would_write_wrong_on_one_line_is_written_as_json():
    text = "name: wf\nsteps:\n  - id: a\n    command: x\n    outputs: {y: {type: string}}\n"
    assert apply(text, {"op": "field.set", "id": "a", "path": ["outputs", "y"], "value": [":>"]}) == \
        text.replace("{y: {type: string}}", '{y: [":>"]}')


def test_edges_and_unsets_around_anchors():
    text = "name: wf\nvariables:\n  greeting: &hello hi\nsteps:\n  - id: a\n    command: *hello\n" \
        "    depends_on: &deps []\n  - id: b\n    command: b\n    depends_on: &d [a]\n  - id: c\n" \
        "    command: c\n    depends_on: *d   # like b\n"
    assert apply(text, {"op": "edge.add", "from": "b", "to": "c"}) == text.replace("*d   # like b", "[a, b]   # like b")
    assert apply(text, {"op": "edge.add", "from": "c", "to": "b"}) == \
        text.replace("&d [a]", "&d [a, c]").replace("*d   # like b", "[a]   # like b")
    assert apply(text, {"op": "field.unset", "id": None, "path": ["variables"]}) == \
        text.replace("variables:\n  greeting: &hello hi\n", "").replace("*hello", "hi")


def test_empty_values_are_filled_in_place():
    text = "name: wf\ndescription:\n  - a\n  - \nx:\nsteps:\n  - id: a\n    command:\n"
    assert apply(text, {"op": "field.set", "id": None, "path": ["description", 1], "value": "b"}) == \
        text.replace("  - \n", "  - b\n")
    assert apply(text, {"op": "field.set", "id": None, "path": ["x"], "value": 3}) == text.replace("x:\n", "x: 3\n")
    assert apply(text, {"op": "field.set", "id": "a", "path": ["command"], "value": "hi"}) == \
        text.replace("    command:\n", "    command: hi\n")
    assert apply(text, {"op": "field.set", "id": "a", "path": ["command", "a"], "value": 1}) == \
        text.replace("    command:\n", "    command:\n      a: 1\n")


def test_plain_keys_are_named_as_the_loader_names_them():
    text = "name: wf\nx:\n  ~: 1\n  1.0: 2\n  ? k\n  : v\n  last: 3\nsteps:\n  - id: a\n    command: c\n"
    assert apply(text, {"op": "field.set", "id": None, "path": ["x", "null"], "value": 5}) == \
        text.replace("~: 1", "~: 5")
    assert apply(text, {"op": "field.set", "id": None, "path": ["x", "1.0"], "value": 5}) == \
        text.replace("1.0: 2", "1.0: 5")
    assert apply(text, {"op": "field.unset", "id": None, "path": ["x", "1.0"]}) == text.replace("  1.0: 2\n", "")
    first = "name: wf\nx:\n  - a: 1\n    ? k\n    : v\nsteps:\n  - id: a\n    command: c\n"
    assert apply(first, {"op": "field.unset", "id": None, "path": ["x", 0, "a"]}) == \
        "name: wf\nx:\n  - ? k\n    : v\nsteps:\n  - id: a\n    command: c\n"


def test_a_new_field_goes_inside_its_step_before_comments_indented_under_its_last_line():
    # The step's own lines end with `max_retries: 2`: the comment after them stays where it is (outside the
    # patched block), and a new block scalar there is written quoted so the comment cannot become its text.
    text = "name: wf\nsteps:\n  - id: a\n    command: x\n    retry:\n      max_retries: 2\n      # about retries\n" \
        "  - id: b\n    command: y\n"
    assert apply(text, {"op": "field.set", "id": "a", "path": ["outputs"], "value": {"x": {"type": "string"}}}) == \
        text.replace("      # about retries\n", "    outputs:\n      x:\n        type: string\n      # about retries\n")
    assert apply(text, {"op": "field.set", "id": "a", "path": ["approval_message"], "value": "one\ntwo"}) == \
        text.replace("      # about retries\n", '    approval_message: "one\\ntwo"\n      # about retries\n')
    # at the comment's own column a block scalar ends before it: it stays a block
    assert apply(text, {"op": "field.set", "id": "a", "path": ["retry", "note"], "value": "a\nb"}) == \
        text.replace("      # about retries\n", "      note: |-\n        a\n        b\n      # about retries\n")
    assert apply(text, {"op": "step.add", "after": "a", "step": {"id": "c", "command": "one\ntwo"}}) == \
        text.replace("  - id: b\n", "  - id: c\n    command: |-\n      one\n      two\n  - id: b\n")


def test_a_new_document_field_goes_after_a_block_scalar_whose_last_line_starts_with_a_hash():
    text = "description: |\n  first\n  # not a comment\nsteps:\n  - id: a\n    command: echo\n"
    assert apply(text, {"op": "field.set", "id": None, "path": ["timeout"], "value": 5}) == \
        text.replace("steps:\n", "timeout: 5\nsteps:\n")
    commented = "description: x\n  # deeper, about the description\n# the steps\nsteps:\n  - id: a\n    command: echo\n"
    assert apply(commented, {"op": "field.set", "id": None, "path": ["notes"], "value": "one\ntwo"}) == \
        commented.replace("description: x\n", 'description: x\nnotes: "one\\ntwo"\n')


def test_a_new_step_follows_the_column_most_steps_put_their_keys_at():
    path = Path(__file__).resolve().parent / "corpus" / "indent_styles.yaml"
    text = path.read_text()  # steps' keys 2, 6, 4 and 4 columns after their dash
    result = apply(text, {"op": "step.add", "after": "b", "step": {"id": "z", "agent": "shell", "command": "x"}})
    assert result == text.replace("          - a\n-\n", "          - a\n-   id: z\n    agent: shell\n    command: x\n-\n")
    four = "steps:\n-   id: a\n    command: x\n"
    assert apply(four, {"op": "step.add", "after": None, "step": {"id": "b", "command": "y"}}) == \
        four + "-   id: b\n    command: y\n"


def test_removing_a_step_many_others_depend_on_under_an_anchored_list_walks_the_tree_once(monkeypatch):
    # each dependent's edit asks for the aliases of the anchored list: one walk of the whole tree per edit was
    # quadratic (a 1 MiB text took minutes); the aliases are now found in one walk per patch
    from engine.edit import editor

    walks = []
    real = editor.descendants
    monkeypatch.setattr(editor, "descendants", lambda node, keys=False: walks.append(node) or real(node, keys))
    text = "name: wf\nsteps: &s\n  - id: a\n    command: echo\n" + "".join(
        f"  - id: s{i}\n    command: echo\n    depends_on: [a, keep]\n" if i % 2 else
        f"  - id: s{i}\n    command: echo\n    depends_on: [a]\n" for i in range(40)) + \
        "  - id: keep\n    command: echo\nx-all: *s\n"
    result = apply(text, {"op": "step.remove", "id": "a"})
    expected = text.replace("  - id: a\n    command: echo\n", "").replace("    depends_on: [a]\n", "").replace(
        "[a, keep]", "[keep]")
    steps_part = expected[:expected.index("x-all: *s\n")]
    assert result.startswith(steps_part + "x-all:\n")  # the steps changed in place; the alias keeps its value
    assert load(result).value["x-all"] == load(text).value["steps"]
    assert len([node for node in walks if node.kind == "map" and node.start == 0]) == 1


def test_removing_an_edge_named_many_times_drops_every_mention_in_both_list_styles():
    # the kept items are found against a set of the dropped ones: 120,000 mentions took minutes, now under 1 s
    head = "name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: x\n  - id: c\n    command: x\n"
    flow = head + "    depends_on: [a, b, a, a]  # twice\n"
    assert apply(flow, {"op": "edge.remove", "from": "a", "to": "c"}) == head + "    depends_on: [b]  # twice\n"
    block = head + "    depends_on:\n      - a\n      - b  # kept\n      - a\n"
    assert apply(block, {"op": "edge.remove", "from": "a", "to": "c"}) == head + "    depends_on:\n      - b  # kept\n"


def test_a_comment_on_the_key_line_of_a_replaced_block_value_stays_on_that_line():
    # found by the lossless property test (anchors_aliases corpus): the comment went with the old value
    text = "name: wf\nsteps:\n  - id: a\n    command: x\n    retry:  # why we retry\n      max_retries: 2\n" \
        "  - id: b\n    command: y\n"
    assert apply(text, {"op": "field.set", "id": "a", "path": ["retry"], "value": 3}) == \
        text.replace("    retry:  # why we retry\n      max_retries: 2\n", "    retry: 3  # why we retry\n")
    assert apply(text, {"op": "field.set", "id": "a", "path": ["retry"], "value": ["p", "q"]}) == \
        text.replace("      max_retries: 2\n", "      - p\n      - q\n")
    crlf = text.replace("\n", "\r\n")
    assert apply(crlf, {"op": "field.set", "id": "a", "path": ["retry"], "value": {"backoff_s": 1}}) == \
        crlf.replace("max_retries: 2", "backoff_s: 1")
