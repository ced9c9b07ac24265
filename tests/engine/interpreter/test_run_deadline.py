"""The run deadline (spec 15): the document's `timeout` bounds the whole run. When it passes, in-flight and
waiting steps are cancelled and never-started ones (all_done included) end cancelled, all `run_timeout`, and the
run fails with `run_timeout`. Checkpoints keep the deadline; a restart is a new run with its own."""

import time

import pytest

from engine.interpreter import (
    CancelChild, CancelStep, ChildFinished, Dispatch, FinishRun, Interpreter, RequestApproval, RunStarted,
    ScheduleTimer, TimerFired,
)
from engine.interpreter.restart import restart_state
from engine.report import report
from engine.runner import LocalRunner
from engine.validation import validate_source

from tests.engine.interpreter.support import Driver, checkpoint, compile_yaml, dispatched, of, run_fast

WIDE = """
name: wide
timeout: 1h
steps:
  - {id: work, agent: mock, command: x}
  - {id: ask, approval: required}
  - {id: child, workflow_ref: other}
  - {id: flaky, agent: mock, command: x, retry: {max_retries: 2, backoff_s: 600, strategy: fixed}}
  - {id: next, agent: mock, command: x, depends_on: [work]}
  - {id: cleanup, agent: mock, command: x, depends_on: [work, ask], trigger_rule: all_done}
"""


def deadline_of(commands: list) -> ScheduleTimer:
    timers = [c for c in of(commands, ScheduleTimer) if c.purpose == "run_timeout"]
    assert len(timers) == 1, commands
    return timers[0]


def test_the_run_schedules_its_deadline_when_it_starts():
    driver = Driver(WIDE)
    timer = deadline_of(driver.start())
    assert (timer.fire_at, timer.step) == (driver.now + 3600, None)


def test_a_document_without_timeout_has_no_deadline():
    driver = Driver(WIDE.replace("timeout: 1h\n", ""))
    assert [c for c in of(driver.start(), ScheduleTimer) if c.purpose == "run_timeout"] == []


@pytest.mark.parametrize(("written", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("2h", 7200),
                                                  ("2d", 172800), ("7d", 604800), ("0.5", 0.5)])
def test_every_duration_form_sets_the_deadline(written, seconds):
    driver = Driver(WIDE.replace("timeout: 1h", f"timeout: {written}"))
    assert deadline_of(driver.start()).fire_at == driver.now + seconds


def test_when_the_deadline_passes_every_unfinished_step_is_cancelled_and_the_run_fails():
    driver = Driver(WIDE)
    timer = deadline_of(driver.start())
    driver.fail("flaky")  # waits 600 s to retry
    assert driver.step("flaky").wait == "retry"
    commands = driver.fire(timer)
    assert of(commands, CancelStep) == [CancelStep("work", 1, "run_timeout")]
    assert of(commands, CancelChild) == [CancelChild("child", "run_timeout")]
    for step in ("work", "ask", "child", "flaky", "next", "cleanup"):
        st = driver.step(step)
        assert (st.status, st.error_code) == ("cancelled", "run_timeout"), step
        assert "timeout of 3600 s passed" in st.error
    assert driver.step("next").attempt == 0 and driver.step("cleanup").attempt == 0  # never started
    state = driver.machine.state
    assert (state.status, state.error_code) == ("failed", "run_timeout")
    assert of(commands, FinishRun) == [FinishRun("failed", "the run's timeout of 3600 s passed", "run_timeout")]
    assert [a["status"] for a in state.approvals] == ["expired"]
    assert dispatched(commands) == [] and state.timers == {}


def test_a_late_result_after_the_deadline_changes_nothing():
    driver = Driver(WIDE)
    driver.fire(deadline_of(driver.start()))
    assert driver.ok("work", {"x": 1}) == []
    assert driver.status("work") == "cancelled"


def test_a_run_that_ends_first_drops_its_deadline():
    driver = Driver("name: quick\ntimeout: 60\nsteps:\n  - {id: a, agent: mock, command: x}\n")
    timer = deadline_of(driver.start())
    driver.ok("a", {})
    assert driver.machine.state.status == "completed" and driver.machine.state.timers == {}
    assert driver.fire(timer) == []
    assert driver.machine.state.status == "completed"


def test_a_halted_run_waiting_for_its_steps_in_flight_still_ends_at_its_deadline():
    driver = Driver(WIDE)
    timer = deadline_of(driver.start())
    driver.feed(ChildFinished("child", 1, "failed", error="boom", at=driver.now))  # halts the run
    assert driver.machine.state.halted and driver.status("work") == "running"
    driver.fire(timer)
    assert (driver.machine.state.status, driver.machine.state.error_code) == ("failed", "run_timeout")
    assert (driver.status("work"), driver.step("work").error_code) == ("cancelled", "run_timeout")
    assert driver.status("child") == "failed"  # it had ended on its own, before the deadline


def test_a_checkpoint_keeps_the_deadline():
    driver = Driver(WIDE)
    timer = deadline_of(driver.start())
    restored = Interpreter.restore(driver.workflow, checkpoint(driver.machine))
    commands = restored.advance(TimerFired(timer.timer, at=timer.fire_at))
    assert of(commands, FinishRun)[0].error_code == "run_timeout"
    assert restored.state.steps["work"].error_code == "run_timeout"


def test_a_restart_gets_a_new_deadline_from_its_own_start():
    workflow = compile_yaml(WIDE)
    first = Driver(WIDE)
    first.fire(deadline_of(first.start()))
    state = restart_state(workflow, first.machine.state, "next", run_id="second")
    second = Interpreter.new(workflow, run_id="second", state=state)
    later = first.now + 5000
    commands = second.advance(RunStarted(at=later))
    assert deadline_of(commands).fire_at == later + 3600


def test_a_held_start_counts_toward_the_deadline():
    driver = Driver(WIDE)
    commands = driver.feed(RunStarted(at=driver.now, hold={"message": "nightly", "approvers": []}))
    assert of(commands, RequestApproval)[0].kind == "start"
    driver.fire(deadline_of(commands))
    state = driver.machine.state
    assert (state.status, state.error_code) == ("failed", "run_timeout")
    assert state.approvals[0]["status"] == "expired"
    assert {st.status for st in state.steps.values()} == {"cancelled"}


# -- the local runner ------------------------------------------------------------------------------------------

SLOW = """
name: slow
timeout: {timeout}
steps:
  - {id: quick, agent: mock, command: x}
  - {id: slow, agent: mock, command: x, depends_on: [quick], mock: {delay_s: 3000}}
  - {id: after, agent: mock, command: x, depends_on: [slow]}
"""


def test_the_local_runner_ends_the_run_at_its_deadline_in_virtual_time():
    result = run_fast(SLOW.replace("{timeout}", "10m"))
    assert (result["status"], result["error_code"]) == ("failed", "run_timeout")
    assert {s: (v["status"], v["error_code"]) for s, v in result["steps"].items()} == {
        "quick": ("completed", None), "slow": ("cancelled", "run_timeout"), "after": ("cancelled", "run_timeout")}


def test_the_local_runner_report_has_the_runs_error_code():
    assert run_fast(SLOW.replace("{timeout}", "2h"))["error_code"] is None  # completes first
    assert run_fast(SLOW.replace("{timeout}", "2h").replace("quick, agent: mock, command: x",
                                                            "quick, agent: mock, command: x, mock: {fail_times: 1}"))[
        "error_code"] == "agent_error"


def test_the_local_runner_ends_the_run_at_its_deadline_in_real_time():
    started = time.monotonic()
    outcome = LocalRunner(compile_yaml(SLOW.replace("{timeout}", "0.5"))).run()
    assert time.monotonic() - started < 30  # not the slow step's 3000 s
    result = report(outcome)
    assert (result["status"], result["error_code"]) == ("failed", "run_timeout")
    assert result["steps"]["slow"]["status"] == "cancelled"


def test_in_real_time_a_run_that_only_a_person_can_continue_is_paused_not_held_until_its_deadline():
    started = time.monotonic()
    outcome = LocalRunner(compile_yaml("name: ask\ntimeout: 7d\nsteps:\n  - {id: ask, approval: required}\n")).run()
    assert outcome.status == "paused" and time.monotonic() - started < 30


@pytest.mark.parametrize("written", ["true", "-1", "0", "1e309", ".nan", "[1]", "'1w'", "'8d'", "'0d'", "604801",
                                     "'99999999999999999999d'", "'1 h 2 m'"])
def test_a_timeout_that_is_no_duration_of_at_most_7_days_is_bad_type_at_its_line(written):
    report = validate_source(f"name: t\ntimeout: {written}\nsteps:\n  - {{id: a, agent: mock, command: x}}\n")
    assert [(p.code, p.line, p.step) for p in report.problems] == [("bad_type", 2, None)]
    assert "7 days" in report.problems[0].message and report.workflow is None
