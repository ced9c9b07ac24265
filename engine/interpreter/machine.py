"""The interpreter: a deterministic state machine fed events, answering with commands.

It does no I/O and reads no clock: time comes in on events (`at`), and
waiting is a ScheduleTimer command. `advance(event)` updates the state in
place and returns the commands; `RunState.to_json()` at any point between
events is a checkpoint from which `Interpreter.restore` continues exactly.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timezone
from typing import Any

from engine.expressions import EvaluationError, Scope
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter import steps, triggers
from engine.interpreter.events import EventRejected
from engine.interpreter.failure import FailureHandling
from engine.interpreter.loops import LoopHandling
from engine.interpreter.start_hold import START, StartHold, hold_fields
from engine.interpreter.state import Options, RunState, RunStatus, StepState, StepStatus, Wait
from engine.workflow import StepSpec, Workflow

APPROVAL_OPTIONS = ("approve", "reject")
TERMINAL = StepStatus.TERMINAL
RUNNING, WAITING, PENDING = StepStatus.RUNNING, StepStatus.WAITING, StepStatus.PENDING
_READY_WAITS = (Wait.QUEUED, Wait.REDISPATCH)
RUN_TIMEOUT = "run_timeout"  # the deadline timer's purpose and the error code of what it ends


def initial_variables(workflow: Workflow, args: dict[str, Any]) -> dict[str, Any]:
    """The document's variables overlaid by the run's arguments."""
    return {**workflow.document.variables, **args}


class Interpreter(FailureHandling, LoopHandling, StartHold):
    """Drives one run of one workflow.

    Args:
        workflow: the compiled workflow the run pinned.
        state: the run's state (new, or restored from a checkpoint).
    """

    def __init__(self, workflow: Workflow, state: RunState):
        self.workflow = workflow
        self.state = state
        self._specs: list[StepSpec] = workflow.steps
        self._ids = [spec.id for spec in self._specs]
        self._index = {spec.id: i for i, spec in enumerate(self._specs)}
        self._st: list[StepState] = [state.steps[spec.id] for spec in self._specs]
        self._deps = [tuple(self._index[d] for d in spec.deps) for spec in self._specs]
        self._dependents: list[list[int]] = [[] for _ in self._specs]
        for i, deps in enumerate(self._deps):
            for d in deps:
                self._dependents[d].append(i)
        self._agent = [spec.kind == "agent" for spec in self._specs]
        self._out: list = []
        self._outputs: dict[str, Any] = {}
        self._stdout: dict[str, str] = {}
        self._scope = Scope(step_ids=workflow.by_id, outputs=self._outputs, stdout=self._stdout,
                            variables=state.variables, args=state.args, run={})
        self._rebuild()

    # -- construction --------------------------------------------------------

    @classmethod
    def new(cls, workflow: Workflow, *, run_id: str, args: dict[str, Any] | None = None,
            options: Options | None = None, state: RunState | None = None) -> Interpreter:
        """A run that has not started: feed it RunStarted.

        Args:
            workflow: the compiled workflow.
            run_id: the run's id (templates see it as `run.id`).
            args: run arguments, already checked against the document's `args`.
            options: concurrency, default timeout, shell agents.
            state: a prepared state (restart-from-step) instead of an empty one.
        """
        if state is None:
            args = dict(args or {})
            state = RunState(run_id=run_id, args=args, options=options or Options(),
                             steps={spec.id: StepState() for spec in workflow.steps},
                             variables=initial_variables(workflow, args))
        return cls(workflow, state)

    @classmethod
    def restore(cls, workflow: Workflow, checkpoint: dict[str, Any]) -> Interpreter:
        """Continue a run from `RunState.to_json()` output."""
        return cls(workflow, RunState.from_json(checkpoint))

    def _rebuild(self) -> None:
        """Derive the indexes that are not part of the checkpoint."""
        st = self._st
        self._open = sum(1 for s in st if s.status not in TERMINAL)
        self._slots = sum(1 for i, s in enumerate(st) if s.status == RUNNING and self._agent[i])
        self._active = sum(1 for s in st if _is_active(s))
        self._unresolved = [sum(1 for d in deps if st[d].status not in TERMINAL) for deps in self._deps]
        self._ready: list[tuple[str, int]] = [(self._ids[i], i) for i, s in enumerate(st)
                                              if s.status == PENDING and s.wait in _READY_WAITS]
        heapq.heapify(self._ready)
        self._candidates = [i for i, s in enumerate(st)
                            if s.status == PENDING and s.wait is None and self._unresolved[i] == 0]
        for i, s in enumerate(st):
            if s.outputs is not None:
                self._outputs[self._ids[i]] = s.outputs
            if s.stdout is not None:
                self._stdout[self._ids[i]] = s.stdout
        self._scope.run = {"id": self.state.run_id, "started_at": _iso(self.state.started_at)}

    # -- the public step function ------------------------------------------

    def advance(self, event: Any) -> list:
        """Apply one event; return the commands it produced.

        Raises:
            EventRejected: the event does not fit the run; the state is unchanged.
        """
        state = self.state
        if event.at > state.now:
            state.now = event.at
        self._out = out = []
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise EventRejected(f"unknown event {type(event).__name__}")
        if state.status in RunStatus.TERMINAL:
            if isinstance(event, (ev.ApprovalDecided, ev.ReplyGiven)):
                raise EventRejected("the run has ended; there is nothing to decide or answer")
            return out
        handler(self, event)
        if state.status == RunStatus.RUNNING:
            self._pump()
        return out

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        return [a for a in self.state.approvals if a["status"] == "pending"]

    @property
    def finished(self) -> bool:
        return self.state.status in RunStatus.TERMINAL

    # -- event handlers -----------------------------------------------------

    def _on_run_started(self, event: ev.RunStarted) -> None:
        state = self.state
        if state.status != RunStatus.PENDING:
            return
        if event.hold is not None:
            hold_fields(event.hold)  # a malformed hold is refused before anything changes
        state.status = RunStatus.RUNNING
        state.started_at = event.at
        self._scope.run = {"id": state.run_id, "started_at": _iso(event.at)}
        self._start_deadline()
        if event.hold is not None:
            self._hold_start(event.hold)

    def _start_deadline(self) -> None:
        """The document's `timeout` bounds the whole run from its start, a start hold's wait included (spec 15).
        The timer is part of the state, so a checkpoint keeps the deadline; a restart is a new run with its own."""
        seconds = self.workflow.document.timeout_s
        if seconds is None:
            return
        state = self.state
        state.seq += 1
        timer_id = f"t{state.seq}"
        fire_at = state.now + seconds
        state.timers[timer_id] = {"step": None, "purpose": RUN_TIMEOUT, "fire_at": fire_at, "seconds": seconds}
        self._out.append(cmd.ScheduleTimer(timer_id, fire_at, RUN_TIMEOUT))

    def _on_step_finished(self, event: ev.StepFinished) -> None:
        i = self._index.get(event.step)
        if i is None:
            raise EventRejected(f"no step {event.step!r} in this workflow")
        st = self._st[i]
        if (st.status != RUNNING or not self._agent[i] or st.attempt != event.attempt
                or st.iteration != event.iteration):
            return  # a late or repeated result of an attempt that is over: ignore it
        st.tokens += event.tokens
        st.cost += event.cost
        st.stdout = event.stdout
        self._stdout[self._ids[i]] = event.stdout
        entry = self._end_call(i, event)
        if not event.ok:
            timed_out = event.error_code == "timeout"
            self._fail(i, event.error_code or "agent_error", event.error or "the agent failed", timed_out)
            return
        outputs = event.outputs if isinstance(event.outputs, dict) else {}
        if entry is not None:
            self._loop_call_done(i, entry, outputs)
        else:
            self._complete_with(i, outputs)

    def _on_dispatch_blocked(self, event: ev.DispatchBlocked) -> None:
        i = self._current_attempt(event.step, event.attempt)
        if i is None:
            return
        self._drop_call(i)
        st = self._st[i]
        delays = self.state.options.gate_retry_delays_s
        if event.retryable and st.gate_retries < len(delays):
            delay = delays[st.gate_retries]
            st.gate_retries += 1
            self._set(i, PENDING, Wait.GATE_RETRY, error=event.message, code=event.code)
            self._timer(i, delay, "gate_retry")
            return
        self._fail(i, event.code, event.message or f"blocked by the {event.gate} gate", False)

    def _on_dispatch_held(self, event: ev.DispatchHeld) -> None:
        i = self._current_attempt(event.step, event.attempt)
        if i is None:
            return
        self._drop_call(i)
        self._set(i, WAITING, Wait.HOLD)
        self._request(i, "hold", APPROVAL_OPTIONS, event.message or f"held by the {event.gate} gate")

    def _pending_request(self, step: str) -> tuple[int | None, dict | None]:
        """The step's index and its pending request for a person (approval, escalation, hold or reply), if any."""
        i = self._index.get(step)
        if i is None:
            return None, None
        return i, next((a for a in reversed(self.state.approvals) if a["step"] == step and a["status"] == "pending"),
                       None)

    def _on_approval_decided(self, event: ev.ApprovalDecided) -> None:
        if event.step == START:
            self._decide_start(event)
            return
        i, record = self._pending_request(event.step)
        if record is None:
            raise EventRejected(f"step {event.step!r} has no pending approval")
        if record["kind"] == "reply":
            raise EventRejected(f"step {event.step!r} waits for a reply, not a decision: answer it with a reply")
        if event.decision not in record["options"]:
            raise EventRejected(f"{event.decision!r} does not answer a{'n' if record['kind'][0] in 'ae' else ''} "
                                f"{record['kind']}; choose one of {', '.join(record['options'])}")
        kind = record["kind"]
        positive = event.decision in ("approve", "retry", "skip")
        record.update(status="approved" if positive else "rejected", decision=event.decision,
                      decided_at=self.state.now, by=event.by, by_id=event.by_id, comment=event.comment)
        spec, st = self._specs[i], self._st[i]
        if kind == "approval":
            if event.decision == "approve" or spec.model.on_reject == "continue":
                self._finish_ok(i, {"approved": event.decision == "approve"})
            else:
                self._fail(i, "rejected", _decided("rejected", event.by), False)
        elif kind == "hold":
            if event.decision == "approve":
                st.hold_approved = True
                self._set(i, PENDING, Wait.REDISPATCH)
                heapq.heappush(self._ready, (self._ids[i], i))
            else:
                self._fail(i, "rejected", _decided("rejected the governance hold", event.by), False)
        elif event.decision == "retry":
            st.escalated = True
            self._launch(i)
        elif event.decision == "skip":
            self._skip_by_policy(i)
        else:
            self._end_failed(i)
            self._halt(i)

    def _on_timer_fired(self, event: ev.TimerFired) -> None:
        timer = self.state.timers.pop(event.timer, None)
        if timer is None:
            return
        if timer["purpose"] == RUN_TIMEOUT:
            self._run_timed_out(timer["seconds"])
            return
        i = self._index[timer["step"]]
        st = self._st[i]
        if st.timer != event.timer:
            return  # superseded
        st.timer = None
        purpose = timer["purpose"]
        if purpose == "timeout" and st.status == RUNNING:
            message = f"timed out after {_seconds(timer['seconds'])}"
            if st.wait == Wait.CHILD:
                self._out.append(cmd.CancelChild(self._ids[i], "timeout"))
            else:
                self._out.append(cmd.CancelStep(self._ids[i], st.attempt, "timeout"))
                self._close_call(i, message)
            self._fail(i, "timeout", message, True)
        elif purpose == "approval_timeout" and st.status == WAITING:
            what = "reply" if st.wait == Wait.REPLY else "decision"
            self._expire_approvals(i)
            self._fail(i, "timeout", f"no {what} within {_seconds(timer['seconds'])}", True)
        elif purpose == "retry" and st.wait == Wait.RETRY:
            self._launch(i)
        elif purpose == "gate_retry" and st.wait == Wait.GATE_RETRY:
            self._set(i, PENDING, Wait.REDISPATCH, error=st.error, code=st.error_code)
            heapq.heappush(self._ready, (self._ids[i], i))

    def _on_child_finished(self, event: ev.ChildFinished) -> None:
        i = self._current_attempt(event.step, event.attempt)
        if i is None or self._st[i].wait != Wait.CHILD:
            return
        if event.status == "completed":
            self._complete_with(i, event.outputs or {})
        else:
            self._fail(i, "subworkflow_failed", f"the sub-workflow {event.status}"
                       + (f": {event.error}" if event.error else ""), False)

    def _on_cancel_requested(self, event: ev.CancelRequested) -> None:
        message = _decided("cancelled", event.by) + (f": {event.reason}" if event.reason else "")
        for i, st in enumerate(self._st):
            if st.status in TERMINAL:
                continue
            self._stop(i, "run_cancelled", message)
        self._finish(RunStatus.CANCELLED, message, "run_cancelled")

    def _run_timed_out(self, seconds: float) -> None:
        """The deadline passed: every step not yet final ends cancelled, what is in flight stopped (spec 15)."""
        message = f"the run's timeout of {_seconds(seconds)} passed"
        for i, st in enumerate(self._st):
            if st.status not in TERMINAL:
                self._stop(i, RUN_TIMEOUT, message)
        self._finish(RunStatus.FAILED, message, RUN_TIMEOUT)

    def _on_run_aborted(self, event: ev.RunAborted) -> None:
        # The steps in flight are what the run was stopped over: they fail with its code; the others never ran.
        for i, st in enumerate(self._st):
            if st.status in TERMINAL:
                continue
            if st.status == StepStatus.RUNNING:
                self._stop(i, event.code, event.message, StepStatus.FAILED)
            else:
                self._stop(i, "run_halted", f"the run was aborted ({event.code})")
        self._finish(RunStatus.FAILED, event.message, event.code)

    # -- the loop: decide ready steps, dispatch, finish -----------------------

    def _pump(self) -> None:
        """Decide every step whose dependencies are final (sorted by id), filling free slots as it goes."""
        if self._start_held() is not None:
            return  # held before its first step: nothing is decided until its start is approved
        if self.state.halted:
            self._settle_when_idle()  # spec 13: settle first, then all_done steps run
        self._decide_ready()
        if self.state.halted and self._settle_when_idle():
            self._decide_ready()  # settled steps make all_done steps ready
        if self.state.status == RunStatus.RUNNING:
            if self._open == 0:
                self._finish_run()
            elif self._active == 0:
                self._stall()

    def _decide_ready(self) -> None:
        while True:
            if self._candidates:
                batch = sorted(self._candidates, key=self._ids.__getitem__)
                self._candidates = []
                for i in batch:
                    if self._st[i].status == PENDING and self._st[i].wait is None:
                        self._decide(i)
            self._fill_slots()
            if not self._candidates:
                break

    def _decide(self, i: int) -> None:
        spec = self._specs[i]
        rule = spec.trigger_rule
        if self.state.halted and rule != "all_done":
            return  # never started: settled by the halt rule once nothing is in flight
        verdict = triggers.decide(rule, (self._st[d].status for d in self._deps[i]))
        if verdict == triggers.SKIP:
            self._set(i, StepStatus.SKIPPED, None)
            return
        if verdict == triggers.UPSTREAM_FAILED:
            self._set(i, StepStatus.FAILED, None, error="blocked by upstream failure", code="upstream_failed")
            return
        if verdict == triggers.RUN_HALTED:
            self._set(i, StepStatus.CANCELLED, None, error="the run halted", code="run_halted")
            return
        if spec.condition is not None:
            try:
                holds = spec.condition.evaluate(self._scope)
            except EvaluationError as exc:
                self._fail(i, "condition_error", f"the condition could not be evaluated: {exc}", False)
                return
            if not holds:
                self._set(i, StepStatus.SKIPPED, None)
                return
        self._launch(i)

    def _launch(self, i: int) -> None:
        """Start a new attempt of a step, whatever its kind (first run and retries alike)."""
        kind = self._specs[i].kind
        if kind == "approval":
            self._start_approval(i)
        elif kind == "subworkflow":
            self._start_child(i)
        else:
            self._set(i, PENDING, Wait.QUEUED, error=self._st[i].error, code=self._st[i].error_code)
            heapq.heappush(self._ready, (self._ids[i], i))
            self._fill_slots()  # dispatch in id order with the approvals and children decided beside it

    def _fill_slots(self) -> None:
        limit = self.state.options.max_concurrency
        while self._ready and self._slots < limit:
            _, i = heapq.heappop(self._ready)
            st = self._st[i]
            if st.status == PENDING and st.wait in _READY_WAITS:
                self._dispatch(i)

    def _dispatch(self, i: int) -> None:
        spec, st = self._specs[i], self._st[i]
        if st.wait == Wait.QUEUED:
            st.attempt += 1
            st.gate_retries = 0
            st.hold_approved = False
            if spec.model.loop is not None and st.iteration == 0:
                st.iteration = 1
        self._mark_started(i)
        self._set(i, RUNNING, None)
        loop = spec.model.loop
        template, agent, scope = spec.command, spec.model.agent or "", self._scope
        if loop is not None:
            kind, name, template, agent = self._loop_call(i)
            scope = self._loop_scope(i, kind)
        try:
            inputs, command, stdin, env = steps.dispatch_values(spec, scope, self.state.options.shell_agents,
                                                                template, agent)
        except steps.StepFailure as exc:
            self._fail(i, exc.code, str(exc), False)
            return
        timeout = spec.model.timeout_s or self.state.options.default_timeout_s
        previous = None
        if loop is not None:
            if not loop.review and not loop.fresh_context:
                previous = scope.local["loop"]["previous_output"] or None
            self._begin_call(i, kind, name, agent, command, env)
        st.calls += 1
        # calls of this agent (the mock's fail_times and sequence); a checkpoint older than the count: all calls
        call = st.agent_calls[agent] = st.agent_calls.get(agent, 0 if st.agent_calls else st.calls - 1) + 1
        self._out.append(cmd.Dispatch(
            step=self._ids[i], attempt=st.attempt, agent=agent, command=command,
            iteration=st.iteration, call=call, stdin=stdin, inputs=inputs, timeout_s=timeout,
            previous_output=previous, governance_approved=st.hold_approved, env=env,
            agent_config=steps.agent_config(spec, agent)))
        self._timer(i, timeout, "timeout")

    def _mark_started(self, i: int) -> None:
        st = self._st[i]
        if st.started_at is None:
            st.started_at = self.state.now
            self.state.dispatch_order.append(self._ids[i])

    def _start_approval(self, i: int) -> None:
        spec, st = self._specs[i], self._st[i]
        st.attempt += 1
        st.calls += 1
        self._mark_started(i)
        try:
            message = steps.approval_message(spec, self._scope)
        except steps.StepFailure as exc:
            self._set(i, RUNNING, None)
            self._fail(i, exc.code, str(exc), False)
            return
        self._set(i, WAITING, Wait.APPROVAL)
        self._request(i, "approval", APPROVAL_OPTIONS, message, tuple(spec.model.approvers or ()))
        if spec.model.timeout is not None:
            self._timer(i, spec.model.timeout_s, "approval_timeout")

    def _start_child(self, i: int) -> None:
        spec, st = self._specs[i], self._st[i]
        st.attempt += 1
        st.calls += 1
        self._mark_started(i)
        self._set(i, RUNNING, Wait.CHILD)
        try:
            args = steps.child_args(spec, self._scope)
        except steps.StepFailure as exc:
            self._fail(i, exc.code, str(exc), False)
            return
        ref = spec.model.ref
        self._out.append(cmd.StartChild(self._ids[i], st.attempt, ref.name, ref.version, args))
        if spec.model.timeout is not None:  # a child run may rightly take long: only an explicit timeout
            self._timer(i, spec.model.timeout_s, "timeout")

    def _request(self, i: int, kind: str, options: tuple, message: str, approvers: tuple = ()) -> None:
        state = self.state
        state.seq += 1
        approval_id = f"a{state.seq}"
        state.approvals.append({
            "id": approval_id, "step": self._ids[i], "kind": kind, "status": "pending", "decision": None,
            "options": list(options), "message": message, "approvers": list(approvers),
            "attempt": self._st[i].attempt, "requested_at": state.now, "decided_at": None, "by": None,
            "by_id": None, "comment": None})
        self._out.append(cmd.RequestApproval(approval_id, self._ids[i], kind, options, message, approvers))

    def _timer(self, i: int, seconds: float, purpose: str) -> None:
        state = self.state
        self._drop_timer(self._st[i])
        state.seq += 1
        timer_id = f"t{state.seq}"
        fire_at = state.now + seconds
        state.timers[timer_id] = {"step": self._ids[i], "purpose": purpose, "fire_at": fire_at, "seconds": seconds}
        self._st[i].timer = timer_id
        self._out.append(cmd.ScheduleTimer(timer_id, fire_at, purpose, self._ids[i]))

    # -- results ---------------------------------------------------------------

    def _complete_with(self, i: int, outputs: dict) -> None:
        try:
            accepted = steps.accept_outputs(self._specs[i], outputs, self._scope, self._st[i].stdout or "")
        except steps.StepFailure as exc:
            self._fail(i, exc.code, str(exc), False)
            return
        self._finish_ok(i, accepted)

    def _finish_ok(self, i: int, outputs: dict) -> None:
        st = self._st[i]
        step_id = self._ids[i]
        st.outputs = outputs
        self._outputs[step_id] = outputs
        variables, order = self.state.variables, self.state.variable_order
        for key, value in outputs.items():
            if key != "_skipped":
                variables[key] = value
                order.append([key, step_id])
        self._set(i, StepStatus.COMPLETED, None)

    def _finish_run(self) -> None:
        state = self.state
        bad = next((s for s in self._st if s.status in StepStatus.FAILED_LIKE or s.status == StepStatus.CANCELLED),
                   None)
        if bad is None:
            self._finish(RunStatus.COMPLETED, None, None)
        else:
            self._finish(RunStatus.FAILED, state.error or "a step failed", state.error_code or bad.error_code)

    def _finish(self, status: str, error: str | None, code: str | None) -> None:
        state = self.state
        state.status, state.error, state.error_code = status, error, code
        state.finished_at = state.now
        state.timers.clear()
        self._expire_start()  # a run that ends while held before its start is no longer asked about it
        self._out.append(cmd.FinishRun(status, error, code))

    # -- bookkeeping ----------------------------------------------------------------

    def _drop_timer(self, st: StepState) -> None:
        if st.timer is not None:
            self.state.timers.pop(st.timer, None)
            st.timer = None

    def _current_attempt(self, step: str, attempt: int) -> int | None:
        i = self._index.get(step)
        if i is None:
            raise EventRejected(f"no step {step!r} in this workflow")
        st = self._st[i]
        if st.status != RUNNING or st.attempt != attempt:
            return None
        return i

    def _set(self, i: int, status: str, wait: str | None, *, error: str | None = None,
             code: str | None = None) -> None:
        """Change a step's status; keeps the counters and notifies."""
        st = self._st[i]
        old_status = st.status
        if status != old_status and st.timer is not None:
            self._drop_timer(st)
        was_active = old_status == RUNNING or old_status == WAITING or (old_status == PENDING and st.wait is not None)
        is_active = status == RUNNING or status == WAITING or (status == PENDING and wait is not None)
        if self._agent[i]:
            self._slots += (status == RUNNING) - (old_status == RUNNING)
        st.status, st.wait, st.error, st.error_code = status, wait, error, code
        self._active += is_active - was_active
        self._out.append(cmd.StepChanged(self._ids[i], status, st.attempt, wait, error, code))
        if status in TERMINAL and old_status not in TERMINAL:
            st.finished_at = self.state.now
            self._open -= 1
            unresolved, candidates = self._unresolved, self._candidates
            for k in self._dependents[i]:
                unresolved[k] -= 1
                if unresolved[k] == 0:
                    candidates.append(k)


def _is_active(st: StepState) -> bool:
    return st.status == RUNNING or st.status == WAITING or (st.status == PENDING and st.wait is not None)


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, tz=timezone.utc).isoformat()


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _decided(verb: str, by: str | None) -> str:
    return f"{verb} by {by}" if by else verb


_HANDLERS = {
    ev.RunStarted: Interpreter._on_run_started,
    ev.StepFinished: Interpreter._on_step_finished,
    ev.DispatchBlocked: Interpreter._on_dispatch_blocked,
    ev.DispatchHeld: Interpreter._on_dispatch_held,
    ev.ApprovalDecided: Interpreter._on_approval_decided,
    ev.ReplyGiven: Interpreter._on_reply_given,
    ev.TimerFired: Interpreter._on_timer_fired,
    ev.ChildFinished: Interpreter._on_child_finished,
    ev.CancelRequested: Interpreter._on_cancel_requested,
    ev.RunAborted: Interpreter._on_run_aborted,
}
