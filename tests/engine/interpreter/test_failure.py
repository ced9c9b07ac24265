"""Failure policies (spec section 8): retries with backoff, escalation, skip, halt, fail_fast, timeouts."""

import pytest

from engine.interpreter import CancelStep, Dispatch, FinishRun, RequestApproval, ScheduleTimer, StepFinished

from tests.engine.interpreter.support import Driver, dispatched, of, run_fast


def one_step(policy: str, extra: str = "") -> str:
    return f"""
        name: policy
        steps:
          - {{id: work, agent: mock, command: x, {policy}{extra}}}
          - {{id: after, agent: mock, command: x, depends_on: [work]}}
    """


def retry_delays(driver: Driver, failures: int) -> list[float]:
    """Fail `failures` times, firing each backoff timer; the delays that were scheduled."""
    delays = []
    driver.start()
    for _ in range(failures):
        commands = driver.fail("work")
        timers = [t for t in of(commands, ScheduleTimer) if t.purpose == "retry"]
        if not timers:
            break
        delays.append(timers[0].fire_at - driver.now)
        driver.fire(timers[0])
    return delays


def test_retry_once_retries_at_once_then_halts():
    driver = Driver(one_step("on_failure: retry_once"))
    driver.start()
    assert dispatched(driver.fail("work")) == ["work"]
    assert driver.step("work").attempt == 2
    commands = driver.fail("work", "still broken")
    assert driver.status("work") == "failed"
    assert driver.status("after") == "failed" and driver.step("after").error_code == "upstream_failed"
    assert of(commands, FinishRun)[0].status == "failed"
    assert "still broken" in driver.machine.state.error


def test_the_retry_alias_backs_off_one_two_four_seconds():
    assert retry_delays(Driver(one_step("on_failure: retry")), 4) == [1.0, 2.0, 4.0]


def test_a_retry_block_backs_off_exponentially_up_to_its_cap():
    policy = "retry: {max_retries: 5, backoff_s: 2, strategy: exponential, max_backoff_s: 10}"
    assert retry_delays(Driver(one_step(policy)), 6) == [2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_fixed_retry_block_waits_the_same_each_time():
    policy = "retry: {max_retries: 3, backoff_s: 1.5, strategy: fixed}"
    assert retry_delays(Driver(one_step(policy)), 4) == [1.5, 1.5, 1.5]


def test_a_step_waiting_to_retry_is_pending_and_holds_no_slot():
    driver = Driver(one_step("on_failure: retry"), max_concurrency=1)
    driver.start()
    driver.fail("work")
    step = driver.step("work")
    assert (step.status, step.wait, step.error) == ("pending", "retry", "boom")
    assert driver.machine._slots == 0


def test_a_retry_block_then_skip_skips_after_the_last_retry():
    result = run_fast(one_step("retry: {max_retries: 1, backoff_s: 1}, on_failure: skip", ", mock: {fail_times: 9}"))
    work = result["steps"]["work"]
    assert (work["status"], work["attempts"], work["outputs"]) == ("skipped", 2, {"_skipped": True})
    assert result["steps"]["after"]["status"] == "skipped"
    assert result["status"] == "completed"


@pytest.mark.parametrize("policy", ["skip", "continue"])
def test_skip_and_continue_end_the_step_skipped_with_a_skipped_marker(policy):
    result = run_fast(one_step(f"on_failure: {policy}", ", mock: {fail_times: 1, error: nope}"))
    work = result["steps"]["work"]
    assert (work["status"], work["outputs"], work["error"]) == ("skipped", {"_skipped": True}, "nope")
    assert result["variables"] == {}


@pytest.mark.parametrize("policy", ["halt", "fail"])
def test_halt_and_fail_stop_the_run(policy):
    result = run_fast(one_step(f"on_failure: {policy}", ", mock: {fail_times: 1}"))
    assert result["steps"]["work"]["status"] == "failed"
    assert result["steps"]["after"]["error_code"] == "upstream_failed"
    assert result["status"] == "failed"


def test_escalation_asks_a_person_after_the_retry_fails():
    driver = Driver(one_step("on_failure: retry_once_then_escalate"))
    driver.start()
    driver.fail("work")
    commands = driver.fail("work", "timeout talking to the API")
    request = of(commands, RequestApproval)[0]
    assert (request.kind, request.options) == ("escalation", ("retry", "skip", "abort"))
    assert "timeout talking to the API" in request.message
    assert (driver.status("work"), driver.step("work").wait) == ("waiting", "escalation")


def test_an_escalation_answered_skip_skips_the_step():
    driver = Driver(one_step("on_failure: retry_once_then_escalate"))
    driver.start()
    driver.fail("work")
    driver.fail("work")
    commands = driver.decide("work", "skip")
    assert driver.status("work") == "skipped"
    assert dispatched(commands) == []
    assert driver.status("after") == "skipped"
    assert driver.machine.state.approvals[0]["status"] == "approved"


def test_a_step_escalates_only_once_and_halts_when_the_escalated_retry_fails():
    driver = Driver(one_step("on_failure: retry_once_then_escalate"))
    driver.start()
    driver.fail("work")
    driver.fail("work")
    assert dispatched(driver.decide("work", "retry")) == ["work"]
    commands = driver.fail("work")
    assert of(commands, RequestApproval) == []
    assert driver.status("work") == "failed" and driver.step("work").attempt == 3
    assert of(commands, FinishRun)[0].status == "failed"


def test_an_escalation_answered_abort_halts_with_the_step_failed():
    driver = Driver(one_step("on_failure: retry_once_then_escalate"))
    driver.start()
    driver.fail("work", "disk full")
    driver.fail("work", "disk full")
    commands = driver.decide("work", "abort")
    assert driver.status("work") == "failed" and driver.step("work").error == "disk full"
    assert driver.machine.state.approvals[0]["status"] == "rejected"
    assert of(commands, FinishRun)[0].status == "failed"


def test_a_template_error_is_not_retried_and_the_terminal_action_applies():
    driver = Driver(one_step("on_failure: retry").replace("command: x, on_failure", "command: '${vars.nothing}', on_failure"))
    driver.start()
    work = driver.step("work")
    assert (work.status, work.error_code, work.attempt) == ("failed", "template_error", 1)


def test_a_template_error_with_skip_skips():
    result = run_fast("""
        name: t
        steps:
          - {id: a, agent: mock, command: "${vars.nothing}", on_failure: skip}
    """)
    assert result["steps"]["a"]["status"] == "skipped"
    assert result["steps"]["a"]["error_code"] == "template_error"


def test_halt_settles_never_started_steps_and_lets_in_flight_ones_finish():
    driver = Driver("""
        name: halt
        steps:
          - {id: slow, agent: mock, command: x}
          - {id: boom, agent: mock, command: x}
          - {id: after_slow, agent: mock, command: x, depends_on: [slow]}
          - {id: after_boom, agent: mock, command: x, depends_on: [boom]}
          - {id: two_hops, agent: mock, command: x, depends_on: [after_boom]}
          - {id: finally, agent: mock, command: x, depends_on: [slow, boom], trigger_rule: all_done}
    """)
    driver.start()
    commands = driver.fail("boom")
    assert of(commands, CancelStep) == []  # wait_all: the in-flight step goes on
    assert driver.status("slow") == "running"
    # spec 8: in-flight steps finish; *then* the never-started steps are settled
    assert {driver.status(s) for s in ("after_slow", "after_boom", "two_hops", "finally")} == {"pending"}
    commands = driver.ok("slow")
    assert (driver.status("after_slow"), driver.step("after_slow").error_code) == ("cancelled", "run_halted")
    assert driver.step("after_boom").error_code == "upstream_failed"
    assert driver.step("two_hops").error_code == "upstream_failed"
    assert dispatched(commands) == ["finally"]
    commands = driver.ok("finally")
    assert of(commands, FinishRun)[0].status == "failed"


def test_fail_fast_cancels_every_in_flight_step_when_the_failure_halts():
    driver = Driver("""
        name: ff
        steps:
          - {id: a, agent: mock, command: x}
          - {id: b, agent: mock, command: x, parallel_failure_policy: fail_fast}
          - {id: c, agent: mock, command: x}
    """)
    driver.start()
    commands = driver.fail("b")
    assert sorted((c.step, c.reason) for c in of(commands, CancelStep)) == [
        ("a", "cancelled_by_fail_fast"), ("c", "cancelled_by_fail_fast")]
    assert driver.status("a") == "cancelled" and driver.step("a").error_code == "cancelled_by_fail_fast"
    assert of(commands, FinishRun)[0].status == "failed"
    assert driver.ok("a") == []  # a late result of a cancelled attempt changes nothing


def test_fail_fast_waits_until_retries_are_used_up():
    driver = Driver("""
        name: ff
        steps:
          - {id: a, agent: mock, command: x}
          - {id: b, agent: mock, command: x, parallel_failure_policy: fail_fast, on_failure: retry_once}
    """)
    driver.start()
    assert of(driver.fail("b"), CancelStep) == []
    assert [c.step for c in of(driver.fail("b"), CancelStep)] == ["a"]


def test_a_step_past_its_timeout_is_cancelled_and_ends_timed_out():
    driver = Driver(one_step("timeout: 30"))
    commands = driver.start()
    timer = of(commands, ScheduleTimer)[0]
    commands = driver.fire(timer)
    assert of(commands, CancelStep) == [CancelStep("work", 1, "timeout")]
    assert (driver.status("work"), driver.step("work").error_code) == ("timed_out", "timeout")
    assert driver.step("after").error_code == "upstream_failed"
    assert driver.ok("work", attempt=1) == []  # the late result is ignored


def test_a_timer_of_a_finished_attempt_does_nothing():
    driver = Driver(one_step("timeout: 30"))
    timer = of(driver.start(), ScheduleTimer)[0]
    driver.ok("work")
    assert driver.fire(timer) == []
    assert driver.status("work") == "completed"


def test_a_timeout_on_the_last_attempt_ends_timed_out_after_earlier_failures():
    driver = Driver(one_step("on_failure: retry_once, timeout: 5"))
    driver.start()
    commands = driver.fail("work")
    timer = next(t for t in of(commands, ScheduleTimer) if t.purpose == "timeout")
    driver.fire(timer)
    assert driver.status("work") == "timed_out"


def test_an_executor_reported_timeout_counts_as_timed_out():
    driver = Driver(one_step(""))
    driver.start()
    driver.fail("work", "killed after 5 s", code="timeout")
    assert driver.status("work") == "timed_out"


def test_output_validation_failures_are_retried_like_agent_errors():
    driver = Driver("""
        name: out
        steps:
          - {id: a, agent: mock, command: x, on_failure: retry_once, outputs: {n: {type: integer, maximum: 5}}}
    """)
    driver.start()
    assert dispatched(driver.ok("a", {"n": 9})) == ["a"]
    driver.ok("a", {"n": 3})
    assert driver.status("a") == "completed" and driver.step("a").outputs == {"n": 3}


def test_a_failure_in_a_halted_run_is_not_retried():
    driver = Driver("""
        name: halted
        steps:
          - {id: a, agent: mock, command: x, on_failure: retry}
          - {id: b, agent: mock, command: x}
    """)
    driver.start()
    driver.fail("b")
    commands = driver.feed(StepFinished("a", 1, False, 0, None, "", "also broken", at=driver.now))
    assert of(commands, ScheduleTimer) == [] and of(commands, Dispatch) == []
    assert driver.status("a") == "failed"


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
