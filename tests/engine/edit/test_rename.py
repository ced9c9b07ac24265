"""step.rename rewrites every reference the engine reads, and nothing else."""

from __future__ import annotations

from engine.edit import apply_patch
from engine.validation import validate_source
from tests.engine.edit.test_patches import apply

# Every place the engine reads a step id as a reference is `{ref}`; every other "fetch" (an argument, a
# variable, an output named fetch, plain text) must stay as it is.
TEMPLATE = """\
name: wf
args:
  fetch: {type: string, default: "x"}
steps:
  - id: {ref}
    agent: shell
    command: echo fetch
    outputs: {rows: {type: integer}, fetch: {type: string}}
  - id: use
    agent: shell
    command: "echo fetch ${{ref}.outputs.rows} {{ {ref}.stdout }} $${fetch.rows} ${args.fetch} ${vars.fetch}"
    stdin: ${ref}.stdout
    depends_on:
      - {ref}   # the fetch step
    condition: "{ref}.outputs.rows > 0 and ${ref}.outputs.fetch != 'fetch'"
    success_criteria: ["outputs.fetch == 'ok'", "{ref}.outputs.rows >= 1"]
    inputs:
      rows: {from: "{ref}.outputs.rows", type: integer}
    outputs: {fetch: {type: string}}
  - id: approve
    approval: required
    approval_message: |
      Rows: ${{ref}.outputs.rows} (fetch)
    depends_on: [use]
  - id: again
    agent: shell
    command: echo ${loop.iteration}
    loop:
      max_iterations: 3
      until: "output == {ref}.outputs.fetch or iteration > 2"
    depends_on: [approve]
  - id: child
    workflow_ref: {name: other, args: {n: "${{ref}.outputs.rows}", m: fetch}}
    depends_on: [again]
"""

EVERY_KIND = TEMPLATE.replace("{ref}", "fetch")
RENAMED = TEMPLATE.replace("{ref}", "load")


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


def test_a_field_holding_many_references_is_scanned_once_per_name(monkeypatch):
    # a scalar may hold 100,000 references: scanning it again for each one (and rebuilding its value per
    # reference) made a 100 KB command take 40 s
    from engine.edit import rename

    scans = []
    real = rename.occurrences
    monkeypatch.setattr(rename, "occurrences", lambda text, word: scans.append(word) or real(text, word))
    many = " ".join(["${fetch.stdout}", "fetch", "{{ fetch.outputs.x }}"] * 200)
    for quote in ("", "'"):
        text = f"name: wf\nsteps:\n  - id: fetch\n    command: x\n  - id: use\n    command: {quote}{many}{quote}\n"
        assert apply(text, {"op": "step.rename", "id": "fetch", "to": "get"}) == text.replace(
            "id: fetch", "id: get").replace("${fetch.", "${get.").replace("{{ fetch.", "{{ get.")
    assert len(scans) == 2 * 2 * 2  # per document, the id and the command: their value and text once each
