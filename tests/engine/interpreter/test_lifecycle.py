"""Loops, sub-workflows, cancel and checkpoints."""

import json

import pytest

from engine.interpreter import (
    CancelChild, CancelRequested, CancelStep, ChildFinished, Dispatch, FinishRun, Interpreter, ScheduleTimer,
    RunAborted, StartChild,
)

from tests.engine.interpreter.support import Driver, checkpoint, dispatched, of, run_fast

LOOP = """
name: loop
steps:
  - id: poll
    agent: mock
    command: poll
    loop: {max_iterations: 3, until: "output.contains('READY') and iteration >= 2"}
  - {id: after, agent: mock, command: x, depends_on: [poll]}
"""


def test_a_loop_dispatches_iterations_until_its_condition_holds():
    driver = Driver(LOOP)
    driver.start()
    commands = driver.ok("poll", {}, stdout="READY")
    dispatch = of(commands, Dispatch)[0]
    assert (dispatch.step, dispatch.iteration, dispatch.call, dispatch.attempt) == ("poll", 2, 2, 1)
    assert dispatch.previous_output == "READY"
    commands = driver.ok("poll", {"n": 2}, stdout="READY now")
    assert dispatched(commands) == ["after"]
    poll = driver.step("poll")
    assert [h["name"] for h in poll.history] == ["poll_iter_1", "poll_iter_2"]
    assert (poll.outputs, poll.stdout, poll.iteration) == ({"n": 2}, "READY now", 2)


def test_a_loop_whose_condition_never_holds_fails_with_loop_exhausted():
    driver = Driver(LOOP)
    driver.start()
    for _ in range(3):
        driver.ok("poll", {}, stdout="not yet")
    assert (driver.status("poll"), driver.step("poll").error_code) == ("failed", "loop_exhausted")


def test_a_loop_with_fresh_context_gets_no_previous_output():
    driver = Driver(LOOP.replace("iteration >= 2\"}", "iteration >= 2\", fresh_context: true}"))
    driver.start()
    assert of(driver.ok("poll", {}, stdout="READY"), Dispatch)[0].previous_output is None


def test_a_result_for_an_earlier_iteration_is_ignored():
    driver = Driver(LOOP)
    driver.start()
    driver.ok("poll", {}, stdout="x")
    assert driver.ok("poll", {}, stdout="READY", iteration=1) == []
    assert driver.step("poll").iteration == 2


def test_loop_outputs_are_validated_after_the_loop_ends():
    result = run_fast("""
        name: loop
        steps:
          - id: poll
            agent: mock
            command: poll
            outputs: {state: {type: string, enum: [done]}}
            loop: {max_iterations: 2, until: "outputs.state == 'working'"}
            mock: {outputs: {state: working}}
    """)
    assert result["steps"]["poll"]["error_code"] == "output_invalid"
    assert result["steps"]["poll"]["iterations"] == 1


CHILD = """
name: parent
steps:
  - {id: prep, agent: mock, command: x}
  - id: sub
    workflow_ref: {name: child_flow, version: 2, args: {count: "${prep.outputs.n}", label: "n=${prep.outputs.n}"}}
    outputs: {total: {type: integer}}
"""


def test_a_sub_workflow_step_starts_a_child_with_rendered_args():
    driver = Driver(CHILD)
    driver.start()
    start = of(driver.ok("prep", {"n": 3}), StartChild)[0]
    assert (start.step, start.workflow, start.version) == ("sub", "child_flow", 2)
    assert start.args == {"count": 3, "label": "n=3"}
    assert (driver.status("sub"), driver.step("sub").wait) == ("running", "child")


def test_a_completed_child_completes_the_step_with_its_outputs_validated():
    driver = Driver(CHILD)
    driver.start()
    driver.ok("prep", {"n": 3})
    commands = driver.feed(ChildFinished("sub", 1, "completed", {"total": "7"}, at=driver.now))
    assert driver.step("sub").outputs == {"total": 7}
    assert of(commands, FinishRun)[0].status == "completed"


def test_a_failed_child_fails_the_step_with_subworkflow_failed():
    driver = Driver(CHILD)
    driver.start()
    driver.ok("prep", {"n": 3})
    driver.feed(ChildFinished("sub", 1, "failed", error="step x failed", at=driver.now))
    assert driver.step("sub").error_code == "subworkflow_failed"
    assert "step x failed" in driver.step("sub").error


def test_cancelling_the_run_cancels_in_flight_steps_and_children():
    driver = Driver(CHILD + "  - {id: other, agent: mock, command: x, depends_on: [prep]}\n")
    driver.start()
    driver.ok("prep", {"n": 3})
    commands = driver.feed(CancelRequested(by="erin", reason="wrong vendor", at=driver.now))
    assert of(commands, CancelChild) == [CancelChild("sub", "run_cancelled")]
    assert of(commands, CancelStep) == [CancelStep("other", 1, "run_cancelled")]
    finish = of(commands, FinishRun)[0]
    assert (finish.status, finish.error_code) == ("cancelled", "run_cancelled")
    assert "erin" in finish.error and "wrong vendor" in finish.error
    assert {driver.status(s) for s in ("sub", "other")} == {"cancelled"}
    assert driver.ok("other") == []


def test_an_aborted_run_fails_its_in_flight_steps_with_the_code_and_cancels_the_rest():
    driver = Driver(CHILD + "  - {id: other, agent: mock, command: x, depends_on: [prep]}\n"
                    + "  - {id: last, agent: mock, command: x, depends_on: [other]}\n")
    driver.start()
    driver.ok("prep", {"n": 3})
    commands = driver.feed(RunAborted("crash_loop", "resumed 4 times after crashes", at=driver.now))
    assert of(commands, CancelChild) == [CancelChild("sub", "crash_loop")]
    assert of(commands, CancelStep) == [CancelStep("other", 1, "crash_loop")]
    finish = of(commands, FinishRun)[0]
    assert (finish.status, finish.error_code, finish.error) == ("failed", "crash_loop", "resumed 4 times after crashes")
    steps = driver.machine.state.steps
    assert {s: (steps[s].status, steps[s].error_code) for s in ("sub", "other", "last")} == {
        "sub": ("failed", "crash_loop"), "other": ("failed", "crash_loop"), "last": ("cancelled", "run_halted")}
    assert driver.ok("other") == []


def test_an_abort_after_the_run_ended_changes_nothing():
    driver = Driver("name: one\nsteps:\n  - {id: a, agent: mock, command: x}\n")
    driver.start()
    driver.ok("a")
    assert driver.feed(RunAborted("crash_loop", "too many crashes", at=driver.now)) == []
    assert driver.machine.state.status == "completed"


def test_cancelling_before_the_run_starts_cancels_every_step():
    driver = Driver(CHILD)
    commands = driver.feed(CancelRequested(at=driver.now))
    assert of(commands, FinishRun)[0].status == "cancelled"
    assert {s.status for s in driver.machine.state.steps.values()} == {"cancelled"}


def test_a_checkpoint_is_plain_json_and_restores_to_the_same_next_commands():
    driver = Driver(LOOP + "  - {id: side, agent: mock, command: x, on_failure: retry}\n")
    driver.start()
    driver.fail("side")
    driver.ok("poll", {}, stdout="x")
    saved = checkpoint(driver.machine)
    assert json.loads(json.dumps(saved)) == saved
    restored = Interpreter.restore(driver.workflow, saved)
    retry_timer = next(t for t in driver.machine.state.timers)
    from engine.interpreter import StepFinished, TimerFired

    for event in (TimerFired(retry_timer, at=driver.now + 1), StepFinished("poll", 1, True, 2, {}, "READY", at=2000)):
        expected = [c.to_json() for c in driver.machine.advance(event)]
        assert [c.to_json() for c in restored.advance(event)] == expected
    assert checkpoint(restored) == checkpoint(driver.machine)


def test_a_checkpoint_of_another_version_of_the_state_format_is_refused():
    driver = Driver(LOOP)
    saved = checkpoint(driver.machine)
    saved["version"] = 99
    with pytest.raises(ValueError, match="state version"):
        Interpreter.restore(driver.workflow, saved)


def test_a_run_that_can_make_no_progress_fails_stalled():
    # Validation rejects cycles, so a stall needs a graph built around it: a and b wait on each other.
    from engine.workflow import Workflow

    valid = Driver("name: s\nsteps:\n  - {id: a, agent: mock, command: x}\n  - {id: b, agent: mock, command: x}\n"
                   "  - {id: c, agent: mock, command: x}\n").workflow
    valid.steps[0].deps, valid.steps[1].deps = ("b",), ("a",)
    machine = Interpreter.new(Workflow(valid.document, valid.steps), run_id="stuck")
    from engine.interpreter import RunStarted, StepFinished

    assert dispatched(machine.advance(RunStarted(at=1.0))) == ["c"]
    commands = machine.advance(StepFinished("c", 1, True, 0, {}, "", at=2.0))
    finish = of(commands, FinishRun)[0]
    assert (finish.status, finish.error_code) == ("failed", "stalled")
    assert {machine.state.steps[s].error_code for s in ("a", "b")} == {"stalled"}


def test_a_sub_workflow_step_is_retried_by_starting_the_child_again():
    # Spec 8: "`retry_once` | one more attempt; if it fails, `halt`".
    # Spec 10: "[the parent step] fails (code `subworkflow_failed`) when [the child] fails."
    # Another attempt of a sub-workflow step is another child run, never an agent dispatch
    # (the step has no agent and no command).
    driver = Driver("""
        name: parent
        steps:
          - {id: sub, workflow_ref: child_flow, on_failure: retry_once}
    """)
    assert len(of(driver.start(), StartChild)) == 1
    commands = driver.feed(ChildFinished("sub", 1, "failed", error="child broke", at=driver.now))
    assert of(commands, Dispatch) == []
    assert [(c.step, c.attempt) for c in of(commands, StartChild)] == [("sub", 2)]
    driver.feed(ChildFinished("sub", 2, "failed", error="child broke again", at=driver.now))
    sub = driver.step("sub")
    assert (sub.status, sub.error_code, sub.attempt) == ("failed", "subworkflow_failed", 2)


def test_a_sub_workflow_step_with_an_explicit_timeout_times_out():
    # Spec 2: "`timeout` | seconds (number) or `"90s"`, `"5m"`, `"1h"`; default from settings" (a step
    # field, with no exception for sub-workflow steps); spec 10: "Cancelling the parent cancels the
    # child."; spec 13: "A step that times out on its last attempt ends `timed_out`".
    driver = Driver("""
        name: parent
        steps:
          - {id: sub, workflow_ref: slow_child, timeout: 5}
    """)
    commands = driver.start()
    assert len(of(commands, StartChild)) == 1
    timers = [t for t in of(commands, ScheduleTimer) if t.step == "sub"]
    assert [t.fire_at - driver.now for t in timers] == [5.0]
    commands = driver.fire(timers[0])
    assert of(commands, CancelChild) != []
    assert driver.status("sub") == "timed_out"
