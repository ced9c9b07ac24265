"""Approvals, and the governance outcomes the cluster feeds back: hold and block."""

import pytest

from engine.interpreter import (
    ApprovalDecided, Dispatch, DispatchBlocked, DispatchHeld, EventRejected, FinishRun, RequestApproval, ScheduleTimer,
)

from tests.engine.interpreter.support import Driver, checkpoint, dispatched, of

GATED = """
name: gated
variables: {vendor: Acme}
steps:
  - {id: prepare, agent: mock, command: x}
  - id: gate
    approval: required
    approvers: [Finance]
    approval_message: "Pay ${vendor} ${prepare.outputs.amount}?"
    depends_on: [prepare]
  - {id: pay, agent: mock, command: x, depends_on: [gate], condition: "$gate.approved"}
"""


def started(text: str = GATED, **options) -> Driver:
    driver = Driver(text, **options)
    driver.start()
    return driver


def test_an_approval_step_asks_the_named_approvers_with_the_rendered_message():
    driver = started()
    commands = driver.ok("prepare", {"amount": 120})
    request = of(commands, RequestApproval)[0]
    assert (request.step, request.kind, request.options) == ("gate", "approval", ("approve", "reject"))
    assert (request.message, request.approvers) == ("Pay Acme 120?", ("Finance",))
    assert driver.status("gate") == "waiting"
    assert driver.machine.pending_approvals[0]["message"] == "Pay Acme 120?"


def test_approving_completes_the_step_with_approved_true_and_records_who():
    driver = started()
    driver.ok("prepare", {"amount": 1})
    commands = driver.decide("gate", "approve", by="carol")
    assert driver.step("gate").outputs == {"approved": True}
    assert dispatched(commands) == ["pay"]
    record = driver.machine.state.approvals[0]
    assert (record["status"], record["decision"], record["by"]) == ("approved", "approve", "carol")


def test_rejecting_fails_the_step_with_rejected_and_halts():
    driver = started()
    driver.ok("prepare", {"amount": 1})
    commands = driver.decide("gate", "reject", by="carol")
    assert (driver.status("gate"), driver.step("gate").error_code) == ("failed", "rejected")
    assert "carol" in driver.step("gate").error
    assert driver.step("pay").error_code == "upstream_failed"
    assert of(commands, FinishRun)[0].status == "failed"


def test_on_reject_continue_completes_with_approved_false():
    driver = started(GATED.replace("approvers: [Finance]", "approvers: [Finance]\n    on_reject: continue"))
    driver.ok("prepare", {"amount": 1})
    commands = driver.decide("gate", "reject")
    assert driver.step("gate").outputs == {"approved": False}
    assert driver.status("pay") == "skipped"
    assert of(commands, FinishRun)[0].status == "completed"
    assert driver.machine.state.approvals[0]["status"] == "rejected"


def test_a_rejection_with_on_failure_skip_skips_the_approval_step():
    driver = started(GATED.replace("approvers: [Finance]", "approvers: [Finance]\n    on_failure: skip"))
    driver.ok("prepare", {"amount": 1})
    driver.decide("gate", "reject")
    assert driver.status("gate") == "skipped" and driver.step("gate").error_code == "rejected"


@pytest.mark.parametrize("decision", ["retry", "skip", "abort", "maybe"])
def test_a_decision_that_does_not_answer_the_approval_is_rejected_and_changes_nothing(decision):
    driver = started()
    driver.ok("prepare", {"amount": 1})
    before = checkpoint(driver.machine)
    with pytest.raises(EventRejected, match="approve, reject"):
        driver.decide("gate", decision)
    assert checkpoint(driver.machine) == before


def test_a_decision_for_a_step_with_no_pending_approval_is_rejected():
    driver = started()
    with pytest.raises(EventRejected, match="no pending approval"):
        driver.decide("gate", "approve")
    with pytest.raises(EventRejected, match="no pending approval"):
        driver.decide("nosuchstep", "approve")


def test_a_decision_after_the_run_ended_is_rejected():
    driver = started()
    driver.ok("prepare", {"amount": 1})
    driver.decide("gate", "reject")
    with pytest.raises(EventRejected, match="ended"):
        driver.decide("gate", "approve")


def test_an_approval_with_a_timeout_expires_and_times_the_step_out():
    driver = started(GATED.replace("approvers: [Finance]", "approvers: [Finance]\n    timeout: 1h"))
    commands = driver.ok("prepare", {"amount": 1})
    timer = next(t for t in of(commands, ScheduleTimer) if t.purpose == "approval_timeout")
    assert timer.fire_at == driver.now + 3600
    driver.fire(timer)
    assert driver.status("gate") == "timed_out"
    assert driver.machine.state.approvals[0]["status"] == "expired"


def test_a_pending_approval_expires_when_another_branch_halts_the_run():
    driver = started("""
        name: two
        steps:
          - {id: gate, approval: required}
          - {id: boom, agent: mock, command: x}
    """)
    commands = driver.fail("boom")
    assert (driver.status("gate"), driver.step("gate").error_code) == ("cancelled", "run_halted")
    assert driver.machine.state.approvals[0]["status"] == "expired"
    assert of(commands, FinishRun)[0].status == "failed"


AGENT = "name: g\nsteps:\n  - {id: pay, agent: writer, command: pay}\n  - {id: next, agent: mock, command: x, depends_on: [pay]}\n"


def test_a_governance_hold_asks_for_a_hold_approval_and_frees_the_slot():
    driver = started(AGENT)
    commands = driver.feed(DispatchHeld("pay", 1, "approval_required", "payments need a human", at=driver.now))
    request = of(commands, RequestApproval)[0]
    assert (request.kind, request.message) == ("hold", "payments need a human")
    assert (driver.status("pay"), driver.step("pay").wait) == ("waiting", "hold")
    assert driver.machine._slots == 0


def test_an_approved_hold_dispatches_the_same_attempt_again_marked_approved():
    driver = started(AGENT)
    driver.feed(DispatchHeld("pay", 1, "approval_required", at=driver.now))
    dispatch = of(driver.decide("pay", "approve"), Dispatch)[0]
    assert (dispatch.step, dispatch.attempt, dispatch.governance_approved) == ("pay", 1, True)


def test_a_rejected_hold_fails_the_step_with_rejected():
    driver = started(AGENT)
    driver.feed(DispatchHeld("pay", 1, "approval_required", at=driver.now))
    driver.decide("pay", "reject")
    assert (driver.status("pay"), driver.step("pay").error_code) == ("failed", "rejected")


def test_a_retryable_block_is_retried_after_one_two_four_seconds_then_fails_with_its_code():
    driver = started(AGENT)
    delays = []
    for _ in range(3):
        commands = driver.feed(DispatchBlocked("pay", 1, "concurrency", "agent_busy", True, "busy", at=driver.now))
        timer = of(commands, ScheduleTimer)[0]
        delays.append(timer.fire_at - driver.now)
        assert (driver.step("pay").wait, driver.step("pay").error_code) == ("gate_retry", "agent_busy")
        redispatch = of(driver.fire(timer), Dispatch)[0]
        assert redispatch.attempt == 1
    assert delays == [1.0, 2.0, 4.0]
    commands = driver.feed(DispatchBlocked("pay", 1, "concurrency", "agent_busy", True, "busy", at=driver.now))
    assert (driver.status("pay"), driver.step("pay").error_code) == ("failed", "agent_busy")
    assert of(commands, FinishRun)[0].status == "failed"


def test_a_non_retryable_block_fails_the_attempt_and_its_policy_applies():
    driver = started(AGENT.replace("command: pay}", "command: pay, on_failure: skip}"))
    driver.feed(DispatchBlocked("pay", 1, "budget_agent", "budget_exceeded", False, "over budget", at=driver.now))
    pay = driver.step("pay")
    assert (pay.status, pay.error_code, pay.error) == ("skipped", "budget_exceeded", "over budget")


def test_an_approval_event_naming_an_old_attempt_is_ignored():
    driver = started(AGENT)
    assert driver.feed(DispatchHeld("pay", 7, "approval_required", at=driver.now)) == []
    assert driver.status("pay") == "running"


def test_decisions_arrive_as_events_and_replay_like_any_other():
    driver = started()
    driver.ok("prepare", {"amount": 1})
    event = ApprovalDecided("gate", "approve", by="dan", comment="fine", at=driver.now)
    assert ApprovalDecided(**{k: v for k, v in event.to_json().items() if k != "type"}) == event


def test_an_approval_step_retried_after_its_timeout_asks_for_approval_again():
    # Spec 8: "`retry_once` | one more attempt"; spec 2: "`approval` | `required` -> an approval
    # step (no agent, no command)". Another attempt of an approval step is a new approval request,
    # not a dispatch to an agent.
    driver = Driver("""
        name: gated
        steps:
          - {id: gate, approval: required, timeout: 10, on_failure: retry_once}
    """)
    timer = next(t for t in of(driver.start(), ScheduleTimer) if t.step == "gate")
    commands = driver.fire(timer)
    assert of(commands, Dispatch) == []
    assert [r.kind for r in of(commands, RequestApproval)] == ["approval"]
    assert driver.status("gate") == "waiting"
    assert [a["status"] for a in driver.machine.state.approvals] == ["expired", "pending"]
