"""Validation of seed 002's loops (spec section 9) and mock.sequence (section 11): codes, steps and positions."""

import pytest

from engine.validation import validate_source

HEAD = "name: wf\nsteps:\n"


def doc(*steps: str) -> str:
    return HEAD + "".join(steps)


def agent_step(step_id: str, command: str = "go", extra: str = "", agent: str = "mock") -> str:
    """A step whose command is on the step's third line; `extra` lines follow it."""
    return f"  - id: {step_id}\n    agent: {agent}\n    command: {command}\n{extra}"


def codes(report) -> list[str]:
    return [p.code for p in report.problems]


def the_problem(report, code):
    found = [p for p in report.problems if p.code == code]
    assert len(found) == 1, report.problems
    return found[0]


def line_of(document: str, needle: str, occurrence: int = 1) -> int:
    seen = 0
    for number, line in enumerate(document.splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not in the document")


def column_of(document: str, needle: str) -> int:
    line = document.splitlines()[line_of(document, needle) - 1]
    return line.index(needle) + 1


def assert_valid(document: str) -> None:
    report = validate_source(document)
    assert report.problems == [] and report.warnings == [], (report.problems, report.warnings)


# -- ${loop.…} paths ---------------------------------------------------------------------------------------

LOOP_PATHS = ["iteration", "previous_output", "reply", "replies", "cycle", "review", "fix"]


@pytest.mark.parametrize("name", LOOP_PATHS)
@pytest.mark.parametrize("form", ["${{loop.{}}}", "{{{{ loop.{} }}}}"])
def test_a_loop_path_in_the_command_of_a_step_without_loop_is_a_problem_at_the_command(name, form):
    path = form.format(name)
    document = doc(agent_step("a"), agent_step("b", f'"run {path}"'))
    problem = the_problem(validate_source(document), "loop_path_outside_loop")
    assert problem.step == "b"
    assert (problem.line, problem.column) == (line_of(document, path), column_of(document, f'"run {path}"'))
    assert f"loop.{name}" in problem.message
    assert codes(validate_source(document)) == ["loop_path_outside_loop"]


def test_a_loop_path_in_an_approval_message_of_an_approval_step_is_a_problem():
    document = doc("  - id: gate\n    approval: required\n    approval_message: \"Reply was ${loop.reply}\"\n")
    problem = the_problem(validate_source(document), "loop_path_outside_loop")
    assert (problem.step, problem.line) == ("gate", 5)


def test_a_loop_path_in_a_shell_command_without_loop_is_a_problem():
    document = doc(agent_step("a", "printf '%s' \"${loop.replies}\"", agent="shell"))
    assert codes(validate_source(document)) == ["loop_path_outside_loop"]


def test_every_step_with_a_loop_path_outside_a_loop_is_reported_at_once():
    document = doc(agent_step("a", '"${loop.iteration}"'), agent_step("b", '"${loop.review}"'),
                   agent_step("c", '"${loop.reply}"', "    loop: {max_iterations: 2}\n"))
    problems = validate_source(document).problems
    assert [(p.code, p.step) for p in problems] == [("loop_path_outside_loop", "a"), ("loop_path_outside_loop", "b")]


def test_an_escaped_loop_path_is_literal_text_and_valid():
    assert_valid(doc(agent_step("a", '"literal $${loop.iteration} text"')))


def test_every_loop_path_is_valid_in_the_templates_of_an_iterate_loop_with_a_reply_gate():
    command = '"' + " ".join("${loop.%s}" % n for n in LOOP_PATHS) + '"'
    assert_valid(doc(agent_step("ask", command,
                                f"    approval_message: {command}\n"
                                "    approvers: [Editors]\n"
                                "    loop: {max_iterations: 3, until: \"output.contains('OK')\", gate: reply}\n")))


def test_loop_paths_are_valid_in_the_command_fix_and_re_review_commands_of_a_review_cycle():
    assert_valid(doc(agent_step(
        "review", '"Review, cycle ${loop.cycle}, after ${loop.fix}"',
        "    loop:\n"
        "      max_cycles: 2\n"
        "      on_request_changes:\n"
        "        fix_command: \"Fix (cycle ${loop.cycle}): ${loop.review}\"\n"
        "        fix_agent: mock\n"
        "        re_review_command: \"Again after {{ loop.fix }}\"\n")))


def test_loop_in_until_is_in_scope_without_a_warning():
    assert_valid(doc(agent_step("a", "go", "    loop: {max_iterations: 3, until: \"loop.iteration >= 2\"}\n")))


@pytest.mark.parametrize("path", ["${loop.nope}", "${loop.iteration_count}", "${loop}"])
def test_a_loop_path_naming_no_value_of_the_loop_is_an_unknown_reference(path):
    document = doc(agent_step("a", f'"x {path}"', "    loop: {max_iterations: 2}\n"))
    problem = the_problem(validate_source(document), "unknown_reference")
    assert (problem.step, problem.line) == ("a", 5)


def test_a_bad_loop_path_in_a_fix_command_is_reported_at_the_fix_command():
    document = doc(agent_step("r", "review", "    loop:\n      max_cycles: 1\n      on_request_changes:\n"
                                             "        fix_command: \"fix ${loop.nope}\"\n"))
    problem = the_problem(validate_source(document), "unknown_reference")
    assert (problem.step, problem.line) == ("r", line_of(document, "fix_command"))


def test_a_fix_command_for_a_shell_fix_agent_may_not_hand_a_loop_value_to_a_nested_shell():
    document = doc(agent_step("r", "review", "    loop:\n      max_cycles: 1\n      on_request_changes:\n"
                                             "        fix_agent: shell\n"
                                             "        fix_command: sh -c \"${loop.review}\"\n"))
    problem = the_problem(validate_source(document), "expression_error")
    assert (problem.step, problem.line) == ("r", line_of(document, "fix_command"))


def test_a_re_review_for_a_shell_reviewer_may_not_hand_a_loop_value_to_a_nested_shell():
    document = doc(agent_step("r", "printf ok", "    loop:\n      max_cycles: 1\n"
                                   "      on_request_changes:\n        fix_command: fix\n        fix_agent: mock\n"
                                   "        re_review_command: bash -c \"${loop.fix}\"\n", agent="shell"))
    problem = the_problem(validate_source(document), "expression_error")
    assert problem.line == line_of(document, "re_review_command")


def test_a_mock_reviewer_with_a_shell_fixer_checks_only_the_fix_command_as_shell():
    assert_valid(doc(agent_step("r", "review", "    loop:\n      max_cycles: 1\n      on_request_changes:\n"
                                               "        fix_agent: shell\n        fix_command: printf '%s' \"${loop.review}\"\n"
                                               "        re_review_command: sh -c \"${loop.fix}\"\n")))


# -- the reserved root ----------------------------------------------------------------------------------------

def test_a_step_named_loop_is_a_bad_step_id_at_the_id():
    document = doc(agent_step("a"), agent_step("loop"))
    problem = the_problem(validate_source(document), "bad_step_id")
    assert (problem.step, problem.line, problem.column) == ("loop", 6, 9)
    assert "loop" in problem.message and "reserved" in problem.message


@pytest.mark.parametrize("step_id", ["loops", "loop_1", "a_loop", "my_loop"])
def test_ids_that_only_contain_loop_are_fine(step_id):
    assert_valid(doc(agent_step(step_id)))


# -- flavours: conflicting_loop, missing_field, bad_type -------------------------------------------------------

REVIEW = "max_cycles: 2, on_request_changes: {fix_command: fix}"


@pytest.mark.parametrize("extra", ["max_iterations: 3", "until: \"output == 'x'\"", "gate: reply",
                                   "max_iterations: 3, until: \"iteration == 2\", gate: reply"])
def test_review_fields_with_iterate_fields_are_a_conflicting_loop_on_the_loop_line(extra):
    document = doc(agent_step("a"), agent_step("b", "review", f"    loop: {{{REVIEW}, {extra}}}\n"))
    problem = the_problem(validate_source(document), "conflicting_loop")
    assert (problem.step, problem.line) == ("b", 9)
    assert "max_cycles" in problem.message or "on_request_changes" in problem.message


@pytest.mark.parametrize("loop", ["{max_cycles: 2, max_iterations: 2}",
                                  "{on_request_changes: {fix_command: f}, until: \"iteration == 1\"}",
                                  "{on_request_changes: {fix_command: f}, gate: reply}"])
def test_either_review_field_alone_with_an_iterate_field_conflicts(loop):
    report = validate_source(doc(agent_step("a", "x", f"    loop: {loop}\n")))
    assert "conflicting_loop" in codes(report)
    assert all(p.step == "a" and p.line == 6 for p in report.problems)


def test_a_conflicting_loop_in_block_style_points_inside_the_loop():
    document = doc(agent_step("a", "review", "    loop:\n      max_cycles: 2\n"
                                             "      on_request_changes:\n        fix_command: fix\n"
                                             "      max_iterations: 4\n"))
    problem = the_problem(validate_source(document), "conflicting_loop")
    assert line_of(document, "loop:") <= problem.line <= line_of(document, "max_iterations")


@pytest.mark.parametrize("loop", ["{max_cycles: 2}", "{on_request_changes: {fix_command: f}}", "{}",
                                  "{until: \"iteration == 2\"}", "{gate: reply, until: \"iteration == 2\"}",
                                  "{fresh_context: true}",
                                  "{max_cycles: 2, on_request_changes: {fix_agent: mock}}",
                                  "{max_cycles: 2, on_request_changes: {}}"])
def test_a_loop_without_what_its_flavour_needs_is_missing_a_field(loop):
    report = validate_source(doc(agent_step("a", "x", f"    loop: {loop}\n")))
    problem = the_problem(report, "missing_field")
    assert (problem.step, problem.line) == ("a", 6)


@pytest.mark.parametrize("cycles", [1, 2, 20])
def test_max_cycles_from_1_to_20_is_valid(cycles):
    assert_valid(doc(agent_step("a", "x", f"    loop: {{max_cycles: {cycles}, "
                                          "on_request_changes: {fix_command: f}}\n")))


@pytest.mark.parametrize("cycles", ["0", "21", "-1", "1000", "2.5", "'3'", "true", "[2]"])
def test_max_cycles_outside_1_to_20_or_not_an_integer_is_bad_type(cycles):
    document = doc(agent_step("a", "x", "    loop:\n"
                                        f"      max_cycles: {cycles}\n"
                                        "      on_request_changes: {fix_command: f}\n"))
    problem = the_problem(validate_source(document), "bad_type")
    assert (problem.step, problem.line) == ("a", line_of(document, "max_cycles"))
    assert "max_cycles" in problem.message


@pytest.mark.parametrize("loop", ["{max_cycles: null, on_request_changes: {fix_command: f}}",
                                  "{max_cycles: 2, on_request_changes: null}", "{max_iterations: null}",
                                  "{max_iterations: null, gate: reply}"])
def test_a_loop_bound_written_null_is_a_problem_not_a_loop_without_a_bound(loop):
    report = validate_source(doc(agent_step("a", "x", f"    loop: {loop}\n")))
    assert codes(report) and set(codes(report)) <= {"bad_type", "missing_field"}, report.problems


@pytest.mark.parametrize("gate", ["approval", "Reply", "replies", "''", "true", "[reply]"])
def test_a_gate_other_than_reply_is_bad_type(gate):
    document = doc(agent_step("a", "x", f"    loop:\n      max_iterations: 2\n      gate: {gate}\n"))
    problem = the_problem(validate_source(document), "bad_type")
    assert (problem.step, problem.line) == ("a", line_of(document, "gate:"))


def test_the_fix_block_rejects_unknown_keys_at_the_key():
    document = doc(agent_step("a", "x", "    loop:\n      max_cycles: 1\n      on_request_changes:\n"
                                        "        fix_command: f\n        fix_prompt: typo\n"))
    problem = the_problem(validate_source(document), "unknown_key")
    assert (problem.step, problem.line, problem.column) == ("a", line_of(document, "fix_prompt"), 9)


@pytest.mark.parametrize("value", ["[fix]", "42", "{text: fix}"])
def test_a_fix_command_that_is_not_text_is_bad_type(value):
    document = doc(agent_step("a", "x", f"    loop:\n      max_cycles: 1\n      on_request_changes:\n"
                                        f"        fix_command: {value}\n"))
    problem = the_problem(validate_source(document), "bad_type")
    assert problem.line == line_of(document, "fix_command")


def test_every_loop_problem_of_a_document_is_reported_at_once():
    document = doc(agent_step("a", "x", f"    loop: {{{REVIEW}, gate: reply}}\n"),
                   agent_step("b", "x", "    loop: {max_cycles: 21, on_request_changes: {fix_command: f}}\n"),
                   agent_step("c", "x", "    loop: {max_cycles: 2}\n"),
                   agent_step("d", '"${loop.cycle}"'),
                   agent_step("loop"))
    found = {(p.code, p.step) for p in validate_source(document).problems}
    assert {("conflicting_loop", "a"), ("bad_type", "b"), ("missing_field", "c"),
            ("loop_path_outside_loop", "d"), ("bad_step_id", "loop")} <= found


# -- mock.sequence ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["stdout: hi", "outputs: {x: 1}", "error: boom", "fail_times: 1"])
def test_a_sequence_with_a_single_answer_field_is_bad_type_at_that_field(field):
    document = doc(agent_step("a", "x", f"    mock:\n      {field}\n      sequence: [{{stdout: a}}]\n"))
    problem = the_problem(validate_source(document), "bad_type")
    key = field.split(":")[0]
    assert (problem.step, problem.line) == ("a", line_of(document, f"      {key}:"))
    assert key in problem.message and "sequence" in problem.message


def test_a_sequence_with_the_other_mock_fields_is_valid():
    assert_valid(doc(agent_step("a", "x", "    mock:\n      delay_s: 1\n      tokens: 3\n      cost: 0.5\n"
                                          "      sequence:\n        - {stdout: a, outputs: {n: 1}}\n"
                                          "        - {error: boom}\n        - {}\n")))


def test_a_sequence_item_with_an_unknown_key_is_an_unknown_key_at_the_key():
    document = doc(agent_step("a", "x", "    mock:\n      sequence:\n        - {stdout: a}\n"
                                        "        - {stdout: b, fail_times: 2}\n"))
    problem = the_problem(validate_source(document), "unknown_key")
    assert (problem.step, problem.line) == ("a", 9)
    assert "fail_times" in problem.message


@pytest.mark.parametrize("sequence", ["a", "{stdout: a}", "[a, b]", "[{stdout: [1]}]", "[{outputs: text}]"])
def test_a_sequence_of_the_wrong_shape_is_bad_type(sequence):
    report = validate_source(doc(agent_step("a", "x", f"    mock:\n      sequence: {sequence}\n")))
    assert codes(report) and set(codes(report)) == {"bad_type"}
    assert all(p.step == "a" and p.line == 7 for p in report.problems)
