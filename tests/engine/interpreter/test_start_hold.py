"""A run held before its first step until its start is approved (spec 15: a schedule that requires approval)."""

import pytest

from engine.interpreter import (
    ApprovalDecided, CancelRequested, Dispatch, EventRejected, FinishRun, Interpreter, RequestApproval, RunAborted,
    RunStarted, StepChanged, event_from_json,
)

from tests.engine.interpreter.support import Driver, checkpoint, dispatched, of

TWO = """
name: nightly
steps:
  - {id: fetch, agent: mock, command: x}
  - {id: report, agent: mock, command: x, depends_on: [fetch]}
"""
HOLD = {"message": "Schedule #3 (nightly at 0 2 * * *) started this run.", "approvers": ["Finance"]}


def held() -> tuple[Driver, list]:
    driver = Driver(TWO)
    return driver, driver.feed(RunStarted(at=driver.now, hold=dict(HOLD)))


def test_a_held_start_asks_the_approvers_and_dispatches_nothing():
    driver, commands = held()
    request = of(commands, RequestApproval)[0]
    assert (request.step, request.kind, request.options) == ("", "start", ("approve", "reject"))
    assert (request.message, request.approvers) == (HOLD["message"], ("Finance",))
    assert dispatched(commands) == [] and of(commands, FinishRun) == []
    assert driver.machine.state.status == "running"
    assert driver.status("fetch") == "pending" and driver.step("fetch").wait is None
    assert driver.machine.pending_approvals[0]["kind"] == "start"


def test_approving_the_start_dispatches_the_first_steps_and_records_who():
    driver, _ = held()
    commands = driver.feed(ApprovalDecided("", "approve", by="carol", by_id=7, at=driver.now))
    assert dispatched(commands) == ["fetch"]
    record = driver.machine.state.approvals[0]
    assert (record["status"], record["decision"], record["by"], record["by_id"]) == ("approved", "approve", "carol", 7)
    driver.ok("fetch")
    driver.ok("report")
    assert driver.machine.state.status == "completed"


def test_rejecting_the_start_cancels_the_run_with_start_rejected_and_no_step_runs():
    driver, _ = held()
    commands = driver.feed(ApprovalDecided("", "reject", by="carol", at=driver.now))
    assert dispatched(commands) == []
    finish = of(commands, FinishRun)[0]
    assert (finish.status, finish.error_code) == ("cancelled", "start_rejected")
    assert "rejected by carol" in finish.error
    assert {c.step: (c.status, c.error_code) for c in of(commands, StepChanged)} == {
        "fetch": ("cancelled", "start_rejected"), "report": ("cancelled", "start_rejected")}
    assert driver.machine.state.approvals[0]["status"] == "rejected"


def test_a_start_decision_is_refused_once_decided_or_when_no_start_is_held():
    driver, _ = held()
    with pytest.raises(EventRejected, match="choose approve or reject"):
        driver.feed(ApprovalDecided("", "retry", at=driver.now))
    driver.feed(ApprovalDecided("", "approve", at=driver.now))
    with pytest.raises(EventRejected, match="not held"):
        driver.feed(ApprovalDecided("", "reject", at=driver.now))
    plain = Driver(TWO)
    plain.start()
    with pytest.raises(EventRejected, match="not held"):
        plain.feed(ApprovalDecided("", "approve", at=plain.now))


@pytest.mark.parametrize("hold", ["yes", {"message": 3}, {"approvers": "Finance"}, {"approvers": [""]},
                                  {"approvers": [None]}])
def test_a_malformed_hold_is_refused_and_changes_nothing(hold):
    driver = Driver(TWO)
    before = {**checkpoint(driver.machine), "now": driver.now}  # a refused event still moves the clock, as any
    with pytest.raises(EventRejected):
        driver.feed(RunStarted(at=driver.now, hold=hold))
    assert checkpoint(driver.machine) == before


def test_a_checkpoint_taken_while_held_restores_held_and_then_goes_on():
    driver, _ = held()
    restored = Interpreter.restore(driver.workflow, checkpoint(driver.machine))
    assert restored.pending_approvals[0]["kind"] == "start"
    assert dispatched(restored.advance(RunStarted(at=driver.now + 1))) == []  # a repeated start changes nothing
    commands = restored.advance(ApprovalDecided("", "approve", by="dave", at=driver.now + 2))
    assert dispatched(commands) == ["fetch"]


def test_cancelling_or_aborting_a_held_run_expires_its_start_request():
    driver, _ = held()
    commands = driver.feed(CancelRequested(by="erin", at=driver.now))
    assert of(commands, FinishRun)[0].status == "cancelled"
    assert driver.machine.state.approvals[0]["status"] == "expired"
    aborted, _ = held()
    aborted.feed(RunAborted("crash_loop", "crashed too often", at=aborted.now))
    assert aborted.machine.state.approvals[0]["status"] == "expired"
    with pytest.raises(EventRejected, match="ended"):
        aborted.feed(ApprovalDecided("", "approve", at=aborted.now))


def test_the_hold_round_trips_through_json_and_a_plain_start_reads_as_before():
    event = RunStarted(at=5.0, hold=dict(HOLD))
    assert event_from_json(event.to_json()) == event
    assert RunStarted(at=5.0).to_json() == {"type": "RunStarted", "at": 5.0}
    assert not any(isinstance(c, Dispatch) for c in held()[1])
