"""step.rename rewrites every reference the engine reads, and nothing else."""

from __future__ import annotations

from engine.edit import apply_patch
from engine.validation import validate_source
from tests.engine.edit.test_patches import apply

EVERY_KIND = """\
name: wf
args:
  fetch: {type: string, default: "x"}
steps:
  - id: fetch
    agent: shell
    command: echo fetch
    outputs: {rows: {type: integer}, fetch: {type: string}}
  - id: use
    agent: shell
    command: "echo fetch ${fetch.outputs.rows} {{ fetch.stdout }} $${fetch.rows} ${args.fetch} ${vars.fetch}"
    stdin: $fetch.stdout
    depends_on:
      - fetch   # the fetch step
    condition: "fetch.outputs.rows > 0 and $fetch.outputs.fetch != 'fetch'"
    success_criteria: ["outputs.fetch == 'ok'", "fetch.outputs.rows >= 1"]
    inputs:
      rows: {from: "fetch.outputs.rows", type: integer}
    outputs: {fetch: {type: string}}
  - id: approve
    approval: required
    approval_message: |
      Rows: ${fetch.outputs.rows} (fetch)
    depends_on: [use]
  - id: again
    agent: shell
    command: echo ${loop.iteration}
    loop:
      max_iterations: 3
      until: "output == fetch.outputs.fetch or iteration > 2"
    depends_on: [approve]
  - id: child
    workflow_ref: {name: other, args: {n: "${fetch.outputs.rows}", m: fetch}}
    depends_on: [again]
"""

RENAMED = """\
name: wf
args:
  fetch: {type: string, default: "x"}
steps:
  - id: load
    agent: shell
    command: echo fetch
    outputs: {rows: {type: integer}, fetch: {type: string}}
  - id: use
    agent: shell
    command: "echo fetch ${load.outputs.rows} {{ load.stdout }} $${fetch.rows} ${args.fetch} ${vars.fetch}"
    stdin: $load.stdout
    depends_on:
      - load   # the fetch step
    condition: "load.outputs.rows > 0 and $load.outputs.fetch != 'fetch'"
    success_criteria: ["outputs.fetch == 'ok'", "load.outputs.rows >= 1"]
    inputs:
      rows: {from: "load.outputs.rows", type: integer}
    outputs: {fetch: {type: string}}
  - id: approve
    approval: required
    approval_message: |
      Rows: ${load.outputs.rows} (fetch)
    depends_on: [use]
  - id: again
    agent: shell
    command: echo ${loop.iteration}
    loop:
      max_iterations: 3
      until: "output == load.outputs.fetch or iteration > 2"
    depends_on: [approve]
  - id: child
    workflow_ref: {name: other, args: {n: "${load.outputs.rows}", m: fetch}}
    depends_on: [again]
"""


def test_the_fixture_is_a_valid_workflow():
    assert validate_source(EVERY_KIND).valid, validate_source(EVERY_KIND).problems


def test_rename_rewrites_every_reference_kind_and_nothing_else():
    text = apply(EVERY_KIND, {"op": "step.rename", "id": "fetch", "to": "load"})
    assert text == RENAMED
    before = validate_source(EVERY_KIND).workflow
    after = validate_source(text).workflow
    assert [s.deps for s in after.steps] == [tuple("load" if d == "fetch" else d for d in s.deps)
                                             for s in before.steps]


def test_rename_changes_only_the_characters_of_the_ids():
    result = apply_patch(EVERY_KIND, {"op": "step.rename", "id": "fetch", "to": "load"})
    assert result.changes and all(c["insert"] == "load" and c["to"] - c["from"] == len("fetch")
                                  for c in result.changes)
    assert len(result.changes) == 12


def test_a_local_name_that_equals_the_old_id_is_not_a_reference():
    text = """\
name: wf
steps:
  - id: output
    agent: mock
    command: x
  - id: b
    agent: mock
    command: "${output.stdout}"
    success_criteria: ["output != ''"]
"""
    assert apply(text, {"op": "step.rename", "id": "output", "to": "first"}) == \
        text.replace("id: output", "id: first").replace("${output.stdout}", "${first.stdout}")


def test_rename_keeps_escapes_that_do_not_spell_the_id():
    text = 'name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: "\\x41 ${a.stdout}"\n'
    assert apply(text, {"op": "step.rename", "id": "a", "to": "z"}) == \
        text.replace("id: a", "id: z").replace("${a.stdout}", "${z.stdout}")


def test_rename_keeps_an_escape_spelling_the_id_where_it_is_not_a_reference():
    text = 'name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n    command: "\\x61 ${a.stdout}"\n'
    new = apply(text, {"op": "step.rename", "id": "a", "to": "z"})
    assert new == 'name: wf\nsteps:\n  - id: z\n    command: x\n  - id: b\n    command: "\\x61 ${z.stdout}"\n'


def test_rename_through_an_anchor_rewrites_the_anchored_text_once():
    text = """\
name: wf
steps:
  - id: a
    command: x
  - id: b
    command: &c "run ${a.stdout}"
  - id: c
    command: *c
"""
    assert apply(text, {"op": "step.rename", "id": "a", "to": "z"}) == \
        text.replace("id: a", "id: z").replace("${a.stdout}", "${z.stdout}")


def test_a_reference_spelled_with_escapes_is_renamed_and_every_other_escape_of_its_string_stays():
    text = ('name: wf\nsteps:\n  - id: a\n    command: x\n  - id: b\n'
            '    command: "echo \\u00e9\\t ${\\x61.stdout} \\x41 ${a.stdout}"\n')
    result = apply_patch(text, {"op": "step.rename", "id": "a", "to": "zed"})
    assert result.text == text.replace("id: a\n", "id: zed\n").replace(
        "${\\x61.stdout} \\x41 ${a.stdout}", "${zed.stdout} \\x41 ${zed.stdout}")
