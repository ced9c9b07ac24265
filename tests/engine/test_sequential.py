"""`sequential: true` (spec 15, seed 002's linear mode): a step without a `depends_on` key depends on the step
before it in the file; `depends_on` (even `[]`) is kept exactly; implicit dependencies still add theirs."""

from __future__ import annotations

import pytest

from engine.validation import validate_source
from tests.engine.interpreter.support import run_fast

DOC = """\
name: linear
sequential: {sequential}
steps:
  - {id: fetch, agent: mock, command: fetch}
  - {id: build, agent: mock, command: build}
  - {id: lint, agent: mock, command: lint, depends_on: []}
  - {id: report, agent: mock, command: "report ${$fetch.stdout}"}
  - {id: publish, agent: mock, command: publish, depends_on: [build]}
  - {id: zeta, agent: mock, command: zeta}
"""


def deps(text: str) -> dict[str, tuple]:
    report = validate_source(text)
    assert report.valid, report.problems
    return {spec.id: tuple(sorted(spec.deps)) for spec in report.workflow.steps}


def test_each_step_without_depends_on_follows_the_one_before_it_in_the_file():
    assert deps(DOC.replace("{sequential}", "true")) == {
        "fetch": (), "build": ("fetch",), "lint": (), "report": ("fetch", "lint"), "publish": ("build",),
        "zeta": ("publish",)}


@pytest.mark.parametrize("value", ["false", None])
def test_without_it_steps_without_dependencies_are_ready_at_once(value):
    text = DOC.replace("{sequential}", value) if value else DOC.replace("sequential: {sequential}\n", "")
    assert deps(text) == {"fetch": (), "build": (), "lint": (), "report": ("fetch",), "publish": ("build",),
                          "zeta": ()}


def test_a_sequential_run_goes_in_file_order():
    result = run_fast(DOC.replace("{sequential}", "true"))
    assert result["status"] == "completed"
    assert result["layers"] == [["fetch", "lint"], ["build", "report"], ["publish"], ["zeta"]]
    assert result["dispatch_order"].index("zeta") == 5


def test_a_failed_step_stops_the_steps_after_it():
    result = run_fast(DOC.replace("{sequential}", "true").replace("command: build}", "command: build, "
                                                                 "mock: {fail_times: 1}}"))
    steps = {name: (step["status"], step["error_code"]) for name, step in result["steps"].items()}
    assert steps["build"] == ("failed", "agent_error")
    assert steps["publish"][0] in ("failed", "cancelled") and result["steps"]["publish"]["attempts"] == 0
    assert result["steps"]["zeta"]["attempts"] == 0


def test_a_library_step_follows_the_file_order_too():
    report = validate_source("name: lib\nsequential: true\nsteps:\n  - {id: a, agent: mock, command: a}\n"
                             "  - {id: b, library_step: check}\n",
                             library={"check": {"agent": "mock", "command": "check"}})
    assert report.valid and report.workflow.by_id["b"].deps == ("a",)


def test_a_cycle_through_the_file_order_is_reported():
    report = validate_source("name: loopy\nsequential: true\nsteps:\n  - {id: a, agent: mock, command: a, "
                             "depends_on: [b]}\n  - {id: b, agent: mock, command: b}\n")
    assert [p.code for p in report.problems] == ["cycle"]


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]", "null", "on"])
def test_sequential_must_be_true_or_false(value):
    report = validate_source(DOC.replace("{sequential}", value))
    assert [(p.code, p.line, p.column) for p in report.problems] == [("bad_type", 2, 13)], report.problems
    assert "`sequential` must be true or false" in report.problems[0].message
