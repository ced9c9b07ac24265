"""engine.validation: every problem code of conformance/FORMAT.md section 2, with its step and position."""

import json

import pytest

from engine.model import STEP_FIELDS
from engine.validation import validate_source

# Step `a` is on lines 3-5, step `b` on lines 6-8; `steps_ab(extra)` puts `extra` on line 9, in step `b`.
HEAD = "name: wf\nsteps:\n  - id: a\n    agent: mock\n    command: go\n  - id: b\n    agent: mock\n    command: go\n"


def steps_ab(extra: str = "") -> str:
    return HEAD + extra


def the_problem(report, code):
    """The one problem with `code` (fails, showing every problem, when there is not exactly one)."""
    found = [p for p in report.problems if p.code == code]
    assert len(found) == 1, report.problems
    return found[0]


def column_of(document: str, line: int, needle: str) -> int:
    return document.splitlines()[line - 1].index(needle) + 1


def test_the_base_document_is_valid():
    report = validate_source(steps_ab())
    assert report.problems == [] and report.warnings == []


# -- unknown_key ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("extra", "step"), [
    ("    bogus: 1\n", "b"),
    ("bogus: 1\n", None),
    ("    loop: {max_iterations: 2, bogus: 1}\n", "b"),
    ("    retry: {max_retries: 1, bogus: 1}\n", "b"),
    ("    mock: {stdout: hi, bogus: 1}\n", "b"),
    ("    inputs: {x: {from: a.outputs.x, bogus: 1}}\n", "b"),
    ("    outputs: {x: {type: string, bogus: 1}}\n", "b"),
    ("    outputs: {x: {type: array, items: {type: string, bogus: 1}}}\n", "b"),
    ("args: {who: {type: string, bogus: 1}}\n", None),
])
def test_an_undefined_key_is_an_unknown_key_at_the_key(extra, step):
    document = steps_ab(extra)
    problem = the_problem(validate_source(document), "unknown_key")
    assert "bogus" in problem.message
    assert problem.step == step
    assert (problem.line, problem.column) == (9, column_of(document, 9, "bogus"))


def test_a_misspelt_step_field_is_an_unknown_key_that_suggests_the_field():
    problem = the_problem(validate_source(steps_ab("    depend_on: [a]\n")), "unknown_key")
    assert "depend_on" in problem.message and "depends_on" in problem.message


def test_keys_starting_with_x_dash_are_fine_anywhere():
    document = steps_ab(
        "    x-note: kept\n"
        "    loop: {max_iterations: 2, x-why: 1}\n"
        "    retry: {max_retries: 1, x-why: 1}\n"
        "    mock: {x-why: 1}\n"
        "    inputs: {i: {from: a.outputs.x, x-why: 1}}\n"
        "    outputs: {o: {type: array, x-why: 1, items: {type: string, x-why: 1}}}\n"
        "x-layout: {a: [0, 0], b: [1, 0]}\n"
        "args: {who: {type: string, x-why: 1}}\n")
    report = validate_source(document)
    assert report.problems == []


def test_a_step_key_written_true_is_an_unknown_key_named_as_written():
    # Spec section 3: a key never silently becomes a boolean; the author must see the key they wrote.
    document = steps_ab("    true: 1\n")
    problem = the_problem(validate_source(document), "unknown_key")
    assert "true" in problem.message
    assert (problem.line, problem.column) == (9, 5)


# -- missing_field ---------------------------------------------------------------------------------------

def test_a_document_without_a_name_is_missing_the_name():
    problem = the_problem(validate_source(HEAD.replace("name: wf\n", "")), "missing_field")
    assert "name" in problem.message
    assert (problem.step, problem.line, problem.column) == (None, None, None)


@pytest.mark.parametrize("document", ["name: wf\n", "name: wf\nsteps: []\n", "name: wf\nsteps:\n"])
def test_a_document_without_steps_or_with_an_empty_list_is_missing_its_steps(document):
    problem = the_problem(validate_source(document), "missing_field")
    assert "steps" in problem.message
    assert problem.step is None


def test_a_step_without_an_id_is_missing_its_id_at_the_step():
    problem = the_problem(validate_source(steps_ab("  - agent: mock\n    command: go\n")), "missing_field")
    assert "id" in problem.message
    assert (problem.step, problem.line) == (None, 9)


def test_an_input_without_from_is_missing_its_from():
    problem = the_problem(validate_source(steps_ab("    inputs: {x: {type: string}}\n")), "missing_field")
    assert "from" in problem.message
    assert (problem.step, problem.line) == ("b", 9)


# -- bad_type ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("extra", "names"), [
    ("    depends_on: a\n", "depends_on"),
    ("    depends_on: [1]\n", "depends_on"),
    ("    on_failure: explode\n", "on_failure"),
    ("    trigger_rule: sometimes\n", "trigger_rule"),
    ("    parallel_failure_policy: eventually\n", "parallel_failure_policy"),
    ("    on_reject: shrug\n", "on_reject"),
    ('    timeout: "5x"\n', "timeout"),
    ("    timeout: [1]\n", "timeout"),
    ("    timeout: true\n", "timeout"),
    ("    retry: {max_retries: '3'}\n", "max_retries"),
    ("    retry: {max_retries: 1.5}\n", "max_retries"),
    ("    loop: {max_iterations: '3'}\n", "max_iterations"),
    ("    loop: {max_iterations: 2.5}\n", "max_iterations"),
    ('    name: "Re\\u202eview"\n', "name"),
    ('    name: "Re\\x07view"\n', "name"),
    ('    x-note: "a\\0b"\n', "NUL"),
    ('    mock: {outputs: {note: "a\\0b"}}\n', "NUL"),
    ("    on_failure: retry_once\n    retry: {max_retries: 2}\n", "retry_once"),
])
def test_a_step_value_of_the_wrong_type_is_bad_type_on_its_line(extra, names):
    problem = the_problem(validate_source(steps_ab(extra)), "bad_type")
    assert names in problem.message
    assert problem.step == "b"
    assert problem.line == len(steps_ab(extra).splitlines())


def test_a_nul_in_a_command_is_bad_type_at_the_command():
    document = HEAD.replace("    command: go\n  - id: b", '    command: "echo \\0"\n  - id: b')
    problem = the_problem(validate_source(document), "bad_type")
    assert (problem.step, problem.line, problem.column) == ("a", 5, 14)


@pytest.mark.parametrize("timeout", ['"90s"', '"5m"', '"1h"', "90", "2.5"])
def test_a_timeout_in_seconds_or_with_a_unit_is_valid(timeout):
    assert validate_source(steps_ab(f"    timeout: {timeout}\n")).problems == []


@pytest.mark.parametrize(("document", "line"), [
    ("name: wf\nsteps: {a: 1}\n", 2),
    ("name: wf\nsteps:\n  - just text\n", 3),
    ("name: Vendor Review\nsteps:\n  - id: a\n    agent: mock\n    command: go\n", 1),
    ('name: "wf\\u202e"\nsteps:\n  - id: a\n    agent: mock\n    command: go\n', 1),
])
def test_a_document_value_of_the_wrong_type_is_bad_type(document, line):
    problems = validate_source(document).problems
    assert {p.code for p in problems} == {"bad_type"}
    assert all(p.line == line and p.step is None for p in problems)


def test_an_approval_value_outside_its_set_is_bad_type():
    problem = the_problem(validate_source("name: wf\nsteps:\n  - id: a\n    approval: maybe\n"), "bad_type")
    assert "approval" in problem.message and (problem.line, problem.step) == (4, "a")


# -- ids ----------------------------------------------------------------------------------------------------------

def test_a_repeated_id_is_a_duplicate_step_id_at_the_later_step():
    document = steps_ab("  - id: a\n    agent: mock\n    command: go\n")
    problem = the_problem(validate_source(document), "duplicate_step_id")
    assert (problem.step, problem.line, problem.column) == ("a", 9, 9)
    assert "line 3" in problem.message


@pytest.mark.parametrize(("written", "label"), [
    ("Bad-Id", "Bad-Id"), ("a" * 65, "a" * 65), ("5", "5"), ("a\u202eb", "a\u202eb"), ("_a", "_a"), ("'a b'", "a b"),
])
def test_an_id_outside_the_pattern_is_a_bad_step_id_at_the_id(written, label):
    document = steps_ab(f"  - id: {written}\n    agent: mock\n    command: go\n")
    problem = the_problem(validate_source(document), "bad_step_id")
    assert (problem.step, problem.line, problem.column) == (label, 9, 9)


def test_a_sixty_four_character_id_is_valid():
    assert validate_source(steps_ab(f"  - id: {'a' * 64}\n    agent: mock\n    command: go\n")).problems == []


# -- references ---------------------------------------------------------------------------------------------------------

def test_depends_on_naming_no_step_is_an_unknown_dependency_at_the_name():
    document = steps_ab("    depends_on: [a, ghost]\n")
    problem = the_problem(validate_source(document), "unknown_dependency")
    assert "ghost" in problem.message
    assert (problem.step, problem.line, problem.column) == ("b", 9, column_of(document, 9, "ghost"))


@pytest.mark.parametrize(("extra", "command"), [
    ("    stdin: $ghost.stdout\n", "go"),
    ("    inputs: {x: {from: ghost.outputs.x}}\n", "go"),
    ("    condition: ghost.outputs.x == 1\n", "go"),
    ("    condition: $ghost.approved\n", "go"),
    ("    success_criteria: ['$ghost.approved']\n", "go"),
    ("", "'echo ${ghost.outputs.x}'"),
    ("", "'echo {{ ghost.outputs.x }}'"),
])
def test_a_path_naming_no_step_is_an_unknown_reference(extra, command):
    document = HEAD[:-len("go\n")] + command + "\n" + extra  # step b's command, then extra on line 9
    problem = the_problem(validate_source(document), "unknown_reference")
    assert "ghost" in problem.message
    assert problem.step == "b"
    assert problem.line == (9 if extra else 8)


def test_a_phase_not_declared_is_an_unknown_phase():
    document = "phases: [intake]\n" + steps_ab("    phase: review\n")
    problem = the_problem(validate_source(document), "unknown_phase")
    assert "review" in problem.message and (problem.step, problem.line) == ("b", 10)


def test_a_declared_phase_is_valid():
    assert validate_source("phases: [intake]\n" + steps_ab("    phase: intake\n")).problems == []


# -- completeness and kinds ---------------------------------------------------------------------------------------------------

def test_an_agent_step_without_agent_is_missing_agent():
    problem = the_problem(validate_source("name: wf\nsteps:\n  - id: a\n    command: go\n"), "missing_agent")
    assert (problem.step, problem.line) == ("a", 3)


def test_an_agent_step_without_command_is_missing_command():
    problem = the_problem(validate_source("name: wf\nsteps:\n  - id: a\n    agent: mock\n"), "missing_command")
    assert (problem.step, problem.line) == ("a", 3)


@pytest.mark.parametrize("fields", ["approval: required\n    agent: mock", "workflow_ref: other\n    command: go"])
def test_a_step_of_two_kinds_is_conflicting(fields):
    problem = the_problem(validate_source(f"name: wf\nsteps:\n  - id: a\n    {fields}\n"), "conflicting_step_kind")
    assert problem.step == "a"


def test_approval_and_sub_workflow_steps_need_no_agent_or_command():
    document = "name: wf\nsteps:\n  - id: a\n    approval: required\n  - id: b\n    workflow_ref: {name: other}\n"
    assert validate_source(document).problems == []


# -- cycles -------------------------------------------------------------------------------------------------------------------------

def test_a_step_depending_on_itself_is_a_cycle_a_to_a():
    problem = the_problem(validate_source(steps_ab("    depends_on: [b]\n")), "cycle")
    assert problem.message.endswith("b -> b")
    assert (problem.step, problem.line) == ("b", 6)


def test_a_three_step_cycle_is_named_in_execution_order_with_the_first_step_repeated():
    document = ("name: wf\nsteps:\n"
                "  - {id: a, agent: m, command: go, depends_on: [c]}\n"
                "  - {id: b, agent: m, command: go, depends_on: [a]}\n"
                "  - {id: c, agent: m, command: go, depends_on: [b]}\n"
                "  - {id: d, agent: m, command: go, depends_on: [a]}\n")
    problem = the_problem(validate_source(document), "cycle")
    rotations = ("a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c")
    assert any(problem.message.endswith(r) for r in rotations), problem.message
    assert "d" not in problem.message.split(":")[-1]
    assert problem.line == {"a": 3, "b": 4, "c": 5}[problem.step]


def test_implicit_dependencies_close_a_cycle_too():
    document = HEAD.replace("    command: go\n  - id: b", "    command: go\n    stdin: $b.stdout\n  - id: b")
    problem = the_problem(validate_source(document + "    condition: a.outputs.ok\n"), "cycle")
    assert problem.message.endswith(("a -> b -> a", "b -> a -> b"))


# -- expressions -----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("extra", "field"), [
    ("    condition: a.outputs.x ==\n", "condition"),
    ("    success_criteria: ['outputs.x >']\n", "success_criteria"),
    ("    loop: {max_iterations: 3, until: 'output.contains('}\n", "until"),
])
def test_an_expression_that_does_not_parse_is_an_expression_error(extra, field):
    problem = the_problem(validate_source(steps_ab(extra)), "expression_error")
    assert field in problem.message and (problem.step, problem.line) == ("b", 9)


@pytest.mark.parametrize("command", ["'echo ${a.outputs.x'", "'echo {{ a.outputs.x'"])
def test_an_unclosed_template_in_a_command_is_an_expression_error(command):
    document = HEAD[:-len("go\n")] + command + "\n"
    problem = the_problem(validate_source(document), "expression_error")
    assert "command" in problem.message and (problem.step, problem.line, problem.column) == ("b", 8, 14)


# -- warnings ----------------------------------------------------------------------------------------------------------------------

def test_a_field_in_both_inputs_and_outputs_is_a_warning_that_leaves_the_document_valid():
    report = validate_source(steps_ab("    inputs: {x: {from: a.outputs.x}}\n    outputs: {x: {type: string}}\n"))
    assert report.problems == [] and report.valid and report.workflow is not None
    [warning] = report.warnings
    assert (warning.code, warning.step, warning.line, warning.column) == ("input_output_overlap", "b", 9, 14)
    assert "x" in warning.message


# -- the whole report ------------------------------------------------------------------------------------------------------------------

def test_every_problem_is_reported_at_once_with_its_step_and_line():
    document = ("name: wf\nsteps:\n"
                "  - {id: one, agent: m, command: go, colour: red}\n"
                "  - {id: Two, agent: m, command: go}\n"
                "  - {id: three, agent: m, command: go, depends_on: [ghost]}\n"
                "  - {id: four, agent: m}\n"
                "  - {id: five, agent: m, command: go, condition: 'one.outputs.x =='}\n")
    found = {(p.code, p.step, p.line) for p in validate_source(document).problems}
    assert found == {("unknown_key", "one", 3), ("bad_step_id", "Two", 4), ("unknown_dependency", "three", 5),
                     ("missing_command", "four", 6), ("expression_error", "five", 7)}


def test_a_valid_document_compiles_with_its_layers():
    document = ("name: wf\nsteps:\n"
                "  - {id: fetch, agent: m, command: go}\n"
                "  - {id: read, agent: m, command: 'use ${fetch.outputs.x}'}\n"
                "  - {id: echo, agent: m, command: go, stdin: $fetch.stdout}\n"
                "  - {id: merge, agent: m, command: 'use {{ echo.outputs.y }}', depends_on: [read]}\n"
                "  - {id: gate, approval: required, condition: 'merge.outputs.ok == true'}\n"
                "  - {id: pass, agent: m, command: go, inputs: {v: {from: gate.outputs.approved}}}\n")
    report = validate_source(document)
    assert report.valid and report.workflow is not None
    assert report.workflow.layers() == [["fetch"], ["echo", "read"], ["merge"], ["gate"], ["pass"]]


def test_an_invalid_document_does_not_compile():
    report = validate_source(steps_ab("    depends_on: [ghost]\n"))
    assert not report.valid and report.workflow is None


# -- library steps ------------------------------------------------------------------------------------------------------------------

LIBRARY = {"fetch": {"id": "library_id", "agent": "library_agent", "command": "fetch it", "timeout": "5m"}}


def test_library_fields_are_defaults_that_the_workflows_fields_override():
    document = "name: wf\nsteps:\n  - id: mine\n    library_step: fetch\n    agent: my_agent\n"
    report = validate_source(document, library=LIBRARY)
    assert report.problems == []
    step = report.workflow.by_id["mine"]
    assert (step.model.agent, step.model.command, step.model.timeout) == ("my_agent", "fetch it", "5m")
    assert list(report.workflow.by_id) == ["mine"]


def test_an_unknown_library_step_is_an_unknown_reference():
    document = "name: wf\nsteps:\n  - id: mine\n    library_step: missing\n"
    report = validate_source(document, library=LIBRARY)
    problem = the_problem(report, "unknown_reference")
    assert "missing" in problem.message and (problem.step, problem.line, problem.column) == ("mine", 4, 19)
    assert [p.code for p in report.problems] == ["unknown_reference"]  # no missing agent or command besides


def test_a_library_step_that_is_no_name_is_a_bad_type_alone():
    report = validate_source("name: wf\nsteps:\n  - id: mine\n    library_step: [fetch]\n", library=LIBRARY)
    assert [p.code for p in report.problems] == ["bad_type"]


def test_without_a_library_a_library_step_is_exempt_from_completeness():
    report = validate_source("name: wf\nsteps:\n  - id: mine\n    library_step: fetch\n")
    assert report.problems == [] and report.workflow is not None


def test_with_a_library_the_merged_step_must_still_be_complete():
    report = validate_source("name: wf\nsteps:\n  - id: mine\n    library_step: bare\n", library={"bare": {"agent": "x"}})
    assert the_problem(report, "missing_command").step == "mine"


# -- estimated_cost (a Forge field the spec's table does not list: docs/engine.md) ------------------------

@pytest.mark.parametrize("written", ["0", "0.25", "3"])
def test_a_steps_estimated_cost_of_zero_or_more_is_valid(written):
    report = validate_source(steps_ab(f"    estimated_cost: {written}\n"))
    assert report.problems == []
    assert report.workflow.by_id["b"].model.estimated_cost == float(written)


@pytest.mark.parametrize(("written", "words"), [
    ("-0.5", "greater than or equal to 0"), (".inf", "a finite number"), ("'1'", "must be a number"),
    ("true", "must be a number"),
])
def test_an_estimated_cost_that_is_not_a_finite_amount_is_bad_type(written, words):
    problem = the_problem(validate_source(steps_ab(f"    estimated_cost: {written}\n")), "bad_type")
    assert (problem.step, problem.line) == ("b", 9)
    assert "estimated_cost" in problem.message and words in problem.message


ANY_VALUE = ({"x": 1}, ["a"], None, 1, 1.5, True, "text")


@pytest.mark.parametrize("key", sorted(STEP_FIELDS - {"id"}) + ["retry_with_on_failure"])
def test_a_step_field_of_any_type_is_a_problem_or_valid_never_a_crash(key):
    """What the editor's typing sends: any value under any key is reported, never an exception (a dict where a
    policy name belongs once raised `unhashable type` out of validation)."""
    for value in ANY_VALUE:
        step = {"id": "a", "agent": "shell", "command": "true"}
        if key == "retry_with_on_failure":
            step.update(retry={"max_retries": 1}, on_failure=value)
        else:
            step[key] = value
        report = validate_source(json.dumps({"name": "w", "steps": [step]}))
        assert report.valid or report.problems, (key, value)


@pytest.mark.parametrize("key", ["name", "description", "variables", "args", "phases", "timeout", "sequential"])
def test_a_document_field_of_any_type_is_a_problem_or_valid_never_a_crash(key):
    for value in ANY_VALUE:
        document = {"name": "w", "steps": [{"id": "a", "agent": "shell", "command": "true"}], key: value}
        report = validate_source(json.dumps(document))
        assert report.valid or report.problems, (key, value)
