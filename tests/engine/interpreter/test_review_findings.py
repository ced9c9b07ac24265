"""Review findings: behaviour of the interpreter and the local runner that contradicts the spec.

Each test asserts what `../shared/spec/lobsterx.md` (or the conformance
FORMAT.md) says and quotes the sentence it relies on. They fail until the
engine is fixed.
"""

from engine.interpreter import (
    CancelChild, ChildFinished, Dispatch, RequestApproval, ScheduleTimer, StartChild,
)

from tests.engine.interpreter.support import Driver, of, run_fast


# -- retries of steps that are not agent steps --------------------------------------------------

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


# -- dispatch order ----------------------------------------------------------------------------

def test_ready_approval_and_agent_steps_are_dispatched_in_id_order():
    # Spec 4: "find ready steps (every dependency resolved), sorted by id; evaluate conditions;
    # dispatch". FORMAT 4: "`dispatch_order`: ids in the order the steps were first dispatched";
    # FORMAT 5: "The loop dispatches every ready step (sorted by id) before it applies any completion".
    result = run_fast("""
        name: order
        steps:
          - {id: a_work, agent: mock, command: x}
          - {id: b_gate, approval: required}
          - {id: c_work, agent: mock, command: x}
    """, decisions={"b_gate": "approve"})
    assert result["status"] == "completed"
    assert result["dispatch_order"] == ["a_work", "b_gate", "c_work"]


# -- halt: upstream_failed for dependents of a step that fails after the halt ---------------------

def test_a_dependent_of_an_in_flight_step_that_fails_after_the_halt_ends_upstream_failed():
    # Spec 8, halt: "in-flight steps finish (`wait_all`) ...; then every step that never started ends
    # `failed` with code `upstream_failed` if it depends, directly or not, on a failed step, else
    # `cancelled` with code `run_halted`". Spec 13: "Only a failed or timed-out ancestor gives
    # `upstream_failed`". `after_slow` depends on `slow`, which failed.
    result = run_fast("""
        name: halt_late
        steps:
          - {id: slow, agent: mock, command: x, mock: {delay_s: 5, fail_times: 1}}
          - {id: boom, agent: mock, command: x, mock: {fail_times: 1}}
          - {id: after_slow, agent: mock, command: x, depends_on: [slow]}
    """)
    assert result["steps"]["slow"]["status"] == "failed"
    after = result["steps"]["after_slow"]
    assert (after["status"], after["error_code"]) == ("failed", "upstream_failed")


def test_a_dependent_of_an_in_flight_step_that_times_out_after_the_halt_ends_upstream_failed():
    # Same sentences as above; spec 13: "`timed_out` counts as failed everywhere (policies, propagation)."
    # `after_slow` depends on `slow`, which timed out after `boom` halted the run.
    driver = Driver("""
        name: halt_late
        steps:
          - {id: slow, agent: mock, command: x, timeout: 10}
          - {id: boom, agent: mock, command: x}
          - {id: after_slow, agent: mock, command: x, depends_on: [slow]}
    """)
    timer = next(t for t in of(driver.start(), ScheduleTimer) if t.step == "slow")
    driver.fail("boom")
    driver.fire(timer)
    assert driver.status("slow") == "timed_out"
    after = driver.step("after_slow")
    assert (after.status, after.error_code) == ("failed", "upstream_failed")


# -- timed_out after escalation or at a halt ------------------------------------------------------

def test_an_escalation_answered_abort_after_a_timed_out_attempt_ends_timed_out():
    # Spec 13: "A step that times out on its last attempt ends `timed_out`, whatever retries came
    # before." and "`timeout` (status `timed_out`)". Abort adds no attempt: the last one timed out.
    result = run_fast("""
        name: esc_timeout
        steps:
          - {id: work, agent: mock, command: x, timeout: 5, on_failure: retry_once_then_escalate,
             mock: {timeout: true}}
    """, decisions={"work": "abort"})
    work = result["steps"]["work"]
    assert (work["attempts"], work["error_code"]) == (2, "timeout")
    assert work["status"] == "timed_out"


def test_a_step_whose_last_attempt_timed_out_ends_timed_out_when_a_halt_ends_its_retry_wait():
    # Spec 13: "A step that times out on its last attempt ends `timed_out`" and "`timeout` (status
    # `timed_out`)". The step waits for its backoff after a timed-out attempt when another step halts
    # the run; it gets no further attempt, so its last attempt is the one that timed out.
    driver = Driver("""
        name: halt_during_backoff
        steps:
          - {id: work, agent: mock, command: x, timeout: 5, on_failure: retry}
          - {id: boom, agent: mock, command: x}
    """)
    timer = next(t for t in of(driver.start(), ScheduleTimer) if t.step == "work")
    driver.fire(timer)
    assert (driver.status("work"), driver.step("work").wait) == ("pending", "retry")
    driver.fail("boom")
    work = driver.step("work")
    assert work.error_code == "timeout"
    assert work.status == "timed_out"


# -- retry block cap ------------------------------------------------------------------------------

def test_a_retry_block_with_a_zero_backoff_cap_retries_without_waiting():
    # Spec 2: "`retry` | general form: `{max_retries: N, backoff_s: 1, strategy: exponential|fixed,
    # max_backoff_s: 60}`"; spec 13: "A `retry:` block defaults to backoff 1 s, exponential, at most
    # 60 s." `max_backoff_s` is the most a backoff may be; an explicit 0 caps it at 0 s.
    driver = Driver("""
        name: capped
        steps:
          - {id: work, agent: mock, command: x, retry: {max_retries: 2, backoff_s: 5, max_backoff_s: 0}}
    """)
    driver.start()
    commands = driver.fail("work")
    assert [t for t in of(commands, ScheduleTimer) if t.purpose == "retry"] == []
    assert [(c.step, c.attempt) for c in of(commands, Dispatch)] == [("work", 2)]


# -- sub-workflow timeout -------------------------------------------------------------------------

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
