"""Failure handling of the interpreter (spec section 8): retry, escalate, skip, halt, fail_fast, stall.

A mixin of Interpreter, kept apart because it is one concern: what happens
after an attempt fails. It uses the machine's bookkeeping (`_set`, `_timer`,
`_request`, `_launch`) and state.
"""

from __future__ import annotations

from engine.interpreter import commands as cmd
from engine.interpreter.state import RunStatus, StepStatus, Wait

# Failures that would repeat exactly on another attempt (spec 13 names template_error).
NOT_RETRIED = frozenset({"template_error", "condition_error", "input_missing"})
ESCALATION_OPTIONS = ("retry", "skip", "abort")
TERMINAL = StepStatus.TERMINAL
RUNNING, PENDING, WAITING = StepStatus.RUNNING, StepStatus.PENDING, StepStatus.WAITING


class FailureHandling:
    def _fail(self, i: int, code: str, message: str, timed_out: bool) -> None:
        """An attempt failed: retry, escalate, skip or halt (spec section 8)."""
        spec, st = self._specs[i], self._st[i]
        final = StepStatus.TIMED_OUT if timed_out else StepStatus.FAILED
        policy = spec.policy
        if self.state.halted:
            if policy.terminal == "skip":
                self._skip_by_policy(i, message, code)
            else:
                self._set(i, final, None, error=message, code=code)
                if spec.fail_fast:
                    self._cancel_in_flight()
            return
        if code not in NOT_RETRIED and st.retries < policy.max_retries:
            st.retries += 1
            delay = policy.delay(st.retries)
            if code == "loop_exhausted":
                st.iteration = 0
            if delay > 0:
                self._set(i, PENDING, Wait.RETRY, error=message, code=code)
                self._timer(i, delay, "retry")
            else:
                st.error, st.error_code = message, code
                self._launch(i)
            return
        if policy.terminal == "skip":
            self._skip_by_policy(i, message, code)
        elif policy.terminal == "escalate" and not st.escalated and code not in NOT_RETRIED:
            self._set(i, WAITING, Wait.ESCALATION, error=message, code=code)
            self._request(i, "escalation", ESCALATION_OPTIONS,
                          f"step {self._ids[i]!r} failed after {st.attempt} attempts: {message}")
        else:
            self._set(i, final, None, error=message, code=code)
            self._halt(i)

    def _end_failed(self, i: int) -> None:
        """End a step with its last failure: timed_out if that attempt timed out (spec 13), else failed."""
        st = self._st[i]
        self._expire_approvals(i)
        status = StepStatus.TIMED_OUT if st.error_code == "timeout" else StepStatus.FAILED
        self._set(i, status, None, error=st.error, code=st.error_code)

    def _skip_by_policy(self, i: int, message: str | None = None, code: str | None = None) -> None:
        st = self._st[i]
        st.outputs = {"_skipped": True}
        self._outputs[self._ids[i]] = st.outputs
        self._set(i, StepStatus.SKIPPED, None, error=message or st.error, code=code or st.error_code)

    def _halt(self, i: int) -> None:
        """The run dispatches nothing new but `all_done` steps (spec 8 and 13).

        People are no longer asked (pending approvals expire), steps waiting to
        retry end with their last failure, in-flight attempts finish (or are
        cancelled under fail_fast), and once nothing is in flight the steps that
        never started are settled.
        """
        state = self.state
        first = not state.halted
        if first:
            state.halted = True
            state.error = f"step {self._ids[i]!r} failed: {self._st[i].error}"
            state.error_code = self._st[i].error_code
        if self._specs[i].fail_fast:
            self._cancel_in_flight()
        if not first:
            return
        for j, st in enumerate(self._st):
            if st.status in TERMINAL or (st.status == RUNNING and st.wait is None):
                continue
            if st.wait == Wait.ESCALATION or (st.attempt > 0 and st.wait in (Wait.RETRY, Wait.QUEUED)):
                self._end_failed(j)
            elif st.wait in (Wait.APPROVAL, Wait.REPLY, Wait.HOLD, Wait.GATE_RETRY, Wait.REDISPATCH):
                self._stop(j, "run_halted", "the run halted")

    def _settle_when_idle(self) -> bool:
        """Once no step is in flight (cleanup steps aside), settle every never-started step but `all_done` ones.

        A step that depends, directly or not, on a failed or timed-out step
        ends `failed` (`upstream_failed`), any other `cancelled` (`run_halted`).
        Returns whether any step was settled.
        """
        specs = self._specs
        if any(st.status == RUNNING and specs[j].trigger_rule != "all_done" for j, st in enumerate(self._st)):
            return False  # in-flight steps finish first; cleanup (all_done) steps do not hold it back
        waiting = [j for j, st in enumerate(self._st)
                   if st.status == PENDING and st.attempt == 0 and self._specs[j].trigger_rule != "all_done"]
        if not waiting:
            return False
        tainted: set[int] = set()
        stack = [j for j, st in enumerate(self._st) if st.status in StepStatus.FAILED_LIKE]
        while stack:
            for k in self._dependents[stack.pop()]:
                if k not in tainted:
                    tainted.add(k)
                    stack.append(k)
        for j in sorted(waiting, key=self._ids.__getitem__):
            if j in tainted:
                self._set(j, StepStatus.FAILED, None, error="blocked by upstream failure", code="upstream_failed")
            else:
                self._set(j, StepStatus.CANCELLED, None, error="the run halted", code="run_halted")
        return True

    def _cancel_in_flight(self) -> None:
        for j, st in enumerate(self._st):
            if st.status in TERMINAL or (st.status == PENDING and st.attempt == 0):
                continue  # final, or never started: the halt rule settles it
            self._stop(j, "cancelled_by_fail_fast", "cancelled: a parallel step failed (fail_fast)")

    def _stop(self, i: int, code: str, message: str, status: str = StepStatus.CANCELLED) -> None:
        """End a non-final step (as cancelled unless told), stopping whatever it has in flight."""
        st = self._st[i]
        if st.status == RUNNING:
            if st.wait == Wait.CHILD:
                self._out.append(cmd.CancelChild(self._ids[i], code))
            else:
                self._out.append(cmd.CancelStep(self._ids[i], st.attempt, code))
                self._close_call(i, message)
        self._expire_approvals(i)
        self._set(i, status, None, error=message, code=code)

    def _expire_approvals(self, i: int) -> None:
        for record in self.state.approvals:
            if record["step"] == self._ids[i] and record["status"] == "pending":
                record["status"] = "expired"

    def _stall(self) -> None:
        for i, st in enumerate(self._st):
            if st.status not in TERMINAL:
                self._set(i, StepStatus.FAILED, None, error="the run stalled: nothing can make progress",
                          code="stalled")
        self._finish(RunStatus.FAILED, "the run stalled: no step is ready or in flight", "stalled")
