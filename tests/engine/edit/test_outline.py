"""outline(text): nodes with their line spans and fields, explicit and implicit edges with `via`; never raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.edit import outline
from engine.validation import validate_source

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT.parent / "shared" / "conformance" / "cases"


def test_explicit_and_implicit_edges_with_where_they_come_from():
    result = outline((CASES / "plan_implicit_deps.yaml").read_text())
    assert result["parsed"] is True and result["error"] is None and result["name"] == "plan_implicit_deps"
    assert result["edges"] == [
        {"from": "src", "to": "via_stdin", "explicit": False, "via": ["stdin"]},
        {"from": "src", "to": "via_inputs", "explicit": False, "via": ["inputs.x.from"]},
        {"from": "via_stdin", "to": "via_condition", "explicit": False, "via": ["condition"]},
        {"from": "via_inputs", "to": "via_template", "explicit": False, "via": ["command"]},
        {"from": "via_condition", "to": "last", "explicit": True, "via": ["depends_on"]},
        {"from": "via_template", "to": "last", "explicit": True, "via": ["depends_on"]},
    ]


def test_the_edges_are_the_validators_dependencies_on_every_valid_case_and_example():
    files = [*CASES.glob("*.yaml"), *(ROOT / "examples").glob("*.yaml")]
    checked = 0
    for path in files:
        report = validate_source(path.read_bytes())
        if not report.valid:
            continue
        result = outline(path.read_text(encoding="utf-8"))
        edges = {(e["from"], e["to"]) for e in result["edges"]}
        assert edges == {(d, s.id) for s in report.workflow.steps for d in s.deps}, path.name
        assert [s["id"] for s in result["steps"]] == [s.id for s in report.workflow.steps]
        checked += 1
    assert checked >= 30


def test_nodes_have_kind_agent_name_lines_and_fields():
    text = """\
name: wf
steps:
  # comment above
  - id: a
    name: First
    agent: shell
    command: |
      echo a

  - id: gate
    approval: required
    depends_on: [a]
  - id: child
    workflow_ref: other
  - id: lib
    library_step: fetch
  - id: again
    agent: mock
    command: x
    loop: {max_iterations: 2}
    timeout: .inf
  - {agent: mock}
  - id: Bad
# a trailing comment
description: after
"""
    result = outline(text)
    nodes = {s["id"]: s for s in result["steps"]}
    assert list(nodes) == ["a", "gate", "child", "lib", "again"]
    assert nodes["a"] == {"id": "a", "kind": "agent", "agent": "shell", "name": "First", "lines": [4, 8],
                          "fields": {"id": "a", "name": "First", "agent": "shell", "command": "echo a\n"}}
    assert [(s["kind"], s["lines"]) for s in result["steps"]] == [
        ("agent", [4, 8]), ("approval", [10, 12]), ("subworkflow", [13, 14]), ("library", [15, 16]),
        ("loop", [17, 21])]
    assert nodes["again"]["fields"]["timeout"] == ".inf"  # JSON has no infinity
    json.dumps(result, allow_nan=False)
    assert result["edges"] == [{"from": "a", "to": "gate", "explicit": True, "via": ["depends_on"]}]


def test_sequential_chain_edges_are_implicit():
    text = "name: wf\nsequential: true\nsteps:\n  - id: a\n    command: a\n  - id: b\n    command: b\n" \
        "  - id: c\n    command: ${a.stdout}\n    depends_on: []\n"
    result = outline(text)
    assert result["sequential"] is True
    assert result["edges"] == [{"from": "a", "to": "b", "explicit": False, "via": ["sequential"]},
                               {"from": "a", "to": "c", "explicit": False, "via": ["command"]}]


def test_an_edge_both_explicit_and_implicit_lists_every_source():
    text = "name: wf\nsteps:\n  - id: a\n    command: a\n  - id: b\n    command: ${a.stdout}\n" \
        "    stdin: $a.stdout\n    depends_on: [a, ghost]\n"
    assert outline(text)["edges"] == [{"from": "a", "to": "b", "explicit": True,
                                       "via": ["depends_on", "stdin", "command"]}]


@pytest.mark.parametrize("text, code", [
    ("name: [\n", "yaml_error"),
    ("- a\n", "not_a_mapping"),
    ("", "not_a_mapping"),
    ("a: " + "[" * 100 + "]" * 100, "too_deep"),
    ((CASES / "validate_alias_bomb.yaml").read_text(), "alias_limit"),
    ("x: '" + "y" * (20 * 1024 * 1024) + "'", "too_large"),
    ("a: b\nb: \x00", "yaml_error"),
])
def test_text_that_does_not_load_gives_its_problem_never_an_exception(text, code):
    result = outline(text)
    assert result["parsed"] is False and result["steps"] == [] and result["edges"] == []
    assert result["error"]["code"] == code and result["error"]["message"]


def test_a_document_with_no_steps_or_a_bad_steps_value():
    assert outline("name: wf\n")["steps"] == []
    assert outline("name: wf\nsteps: 5\n") == {"parsed": True, "error": None, "sequential": False, "name": "wf",
                                              "steps": [], "edges": []}
    assert outline(None)["parsed"] is False


def test_a_step_whose_dash_stands_alone_starts_at_its_dash_and_the_step_before_ends_before_it():
    text = (Path(__file__).resolve().parent / "corpus" / "indent_styles.yaml").read_text()
    spans = {step["id"]: step["lines"] for step in outline(text)["steps"]}
    assert spans == {"a": [7, 9], "b": [10, 14], "c": [15, 19], "d": [20, 22]}
    assert text.split("\n")[14] == "-"
    # an empty item at the end of the step before is that step's, not the next one's dash
    empty_item = "steps:\n- id: a\n  depends_on:\n  -\n- id: b\n"
    assert {s["id"]: s["lines"] for s in outline(empty_item)["steps"]} == {"a": [2, 4], "b": [5, 5]}
