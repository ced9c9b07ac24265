"""Spec 15: success criteria read `output` (the step's stdout) and `outputs`; a bare name no declaration puts
in scope in a condition, a success criterion or `loop.until` is an `unknown_name` warning with its line and the
nearest known name; the document stays valid."""

from __future__ import annotations

import textwrap

import pytest

from engine.validation import validate_source
from tests.engine.interpreter.support import Driver

DOC = """\
name: names
variables: {region: eu}
args:
  threshold: {type: integer, default: 3}
steps:
  - id: probe
    agent: mock
    command: probe
    outputs: {ready: {type: boolean}}
    inputs: {target: {from: vars.region}}
    mock: {outputs: {url: "https://example.test"}}
  - id: build
    agent: mock
    command: build
    mock: {sequence: [{outputs: {build_id: 7}}]}
  - id: gate
    approval: required
  - id: act
    agent: mock
    command: act
    depends_on: [probe, build, gate]
    {field}
"""


def warnings_of(field: str) -> list:
    report = validate_source(DOC.replace("{field}", field))
    assert report.valid, report.problems
    return report.warnings


@pytest.mark.parametrize("field", [
    'condition: "ready and region == \'eu\' and threshold > 1 and url != null and build_id == 7"',
    'condition: "target == \'eu\' and approved and vars.region == \'eu\' and args.threshold > 0 and run.id != null"',
    'condition: "probe.outputs.ready and $probe.stdout != \'\'"',
    'success_criteria: ["not output.contains(\'BLOCKED\')", "outputs.x == 1", "ready"]',
    'loop: {max_iterations: 2, until: "output.contains(\'OK\') or iteration > 1 or previous_output == output '
    'or loop.iteration > 1 or outputs.done"}',
])
def test_names_that_a_declaration_puts_in_scope_are_not_warned_about(field):
    assert warnings_of(field) == []


@pytest.mark.parametrize(("field", "name", "hint", "where"), [
    ('condition: "redy"', "redy", "ready", "`condition`"),
    ('condition: "not output.contains(\'x\')"', "output", None, "`condition`"),  # only criteria and until have it
    ('condition: "outputs.ready"', "outputs", None, "`condition`"),
    ('success_criteria: ["ready", "not outptu.contains(\'BLOCKED\')"]', "outptu", "output", "`success_criteria`"),
    ('success_criteria: ["iteration > 1"]', "iteration", None, "`success_criteria`"),
    ('loop: {max_iterations: 2, until: "iteraton > 1"}', "iteraton", "iteration", "`loop.until`"),
    ('condition: "thresold > 2"', "thresold", "threshold", "`condition`"),
])
def test_an_unknown_bare_name_is_a_warning_at_its_line_with_the_nearest_name(field, name, hint, where):
    found = warnings_of(field)
    assert [w.code for w in found] == ["unknown_name"], found
    warning = found[0]
    assert (warning.step, warning.line) == ("act", 22) and warning.column is not None
    assert f"{name!r} is not a name in scope in {where}" in warning.message
    if hint:
        assert f"did you mean {hint!r}?" in warning.message
    assert "null" in warning.message


def test_each_unknown_name_is_reported_with_its_own_line():
    document = textwrap.dedent("""\
        name: lines
        steps:
          - id: a
            agent: mock
            command: a
            condition: "missing_one"
          - id: b
            agent: mock
            command: b
            success_criteria:
              - "output != ''"
              - "missing_two"
        """)
    report = validate_source(document)
    assert report.valid
    assert [(w.code, w.step, w.line, w.column) for w in report.warnings] == [
        ("unknown_name", "a", 6, 16), ("unknown_name", "b", 12, 9)]
    assert report.to_json()["warnings"][0]["code"] == "unknown_name"


def test_an_unknown_name_in_a_template_or_an_input_path_is_not_warned_about():
    # Templates fail at run time on a missing value (spec 6); the rule covers expressions only.
    report = validate_source("name: t\nsteps:\n  - {id: a, agent: mock, command: 'go ${nothing}'}\n")
    assert report.valid and report.warnings == []


def test_a_document_of_many_unknown_names_validates_in_bounded_time():
    steps = "".join(f"  - {{id: s{i}, agent: mock, command: go, condition: 'name_{i} or other_{i}'}}\n"
                    for i in range(2000))
    report = validate_source("name: many\nsteps:\n" + steps)
    assert report.valid and len(report.warnings) == 4000
    assert sum("did you mean" in w.message for w in report.warnings) <= 50  # hints are budgeted


# -- success criteria read the output -----------------------------------------------------------------------

CRITERIA = """
name: criteria
steps:
  - id: deploy
    agent: mock
    command: deploy
    outputs: {score: {type: integer}}
    success_criteria: ["not output.contains('BLOCKED')", "outputs.score >= 3"]
"""


@pytest.mark.parametrize(("stdout", "score", "status", "code"), [
    ("BLOCKED: missing credentials", 5, "failed", "success_criteria_failed"),
    ("deployed", 5, "completed", None),
    ("deployed", 2, "failed", "success_criteria_failed"),
    ("", 3, "completed", None),
])
def test_success_criteria_read_the_steps_stdout_as_output(stdout, score, status, code):
    driver = Driver(CRITERIA)
    driver.start()
    driver.ok("deploy", {"score": score}, stdout=stdout)
    assert (driver.status("deploy"), driver.step("deploy").error_code) == (status, code)


def test_a_criterion_reads_this_attempts_stdout_not_an_earlier_ones():
    driver = Driver(CRITERIA.replace("outputs: {score", "retry: {max_retries: 1, backoff_s: 0}\n    outputs: {score"))
    driver.start()
    driver.ok("deploy", {"score": 5}, stdout="BLOCKED")
    assert driver.status("deploy") != "failed" and driver.step("deploy").attempt == 2
    driver.ok("deploy", {"score": 5}, stdout="fine now")
    assert driver.status("deploy") == "completed"
