"""`advance`: feed a run's due events to its interpreter and carry out the commands.

Each round is one transaction under the run's row lock: the due inputs are
fed, and the new state of every step that changed, the run's event log, its
approvals, audit rows and any new inputs are written together. Work that
leaves the database (queued steps, inline python calls, other runs) happens
after the commit. A round that fails leaves nothing behind: its inputs stay
unprocessed and the watchdog feeds them again.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter.events import EventRejected
from engine.interpreter.state import RunStatus
from forge import live
from forge.audit import codes
from forge.audit.services import SYSTEM
from forge.runs.models import Approval, Checkpoint, Run, RunEvent, RunInput, StepResult
from forge.runs.times import to_datetime
from forge.runtime import bridge, children, dispatch, gateways, inbox, leases, step_events, store
from forge.runtime.replies import reply_detail
from forge.runtime.completion import Completion, Outcome, record_completion
from forge.runtime.effects import Effects

BATCH = 500
# A checkpoint costs as much as the state is large (about one row per step), so a run checkpoints every
# max(50, steps) inputs: that keeps its cost per input constant, and a rebuild replays at most that many.
CHECKPOINT_EVERY = 50
KEEP_CHECKPOINTS = 2


def advance(run_id: int, completion: Completion | None = None) -> Outcome | None:
    """Process every due input of the run, round after round, until none is left.

    A worker that just ran a step hands its `completion` in, so recording the
    result and feeding it share the first round's transaction. The outcome of
    recording it is returned.
    """
    outcome = None
    inline: list[dispatch.InlineCall] = []
    try:
        while True:
            work, recorded = _round(run_id, [call.result_input() for call in inline], completion)
            leases.release([call.lease for call in inline])  # their results are in the inbox now
            if completion is not None:
                outcome, completion = recorded, None
            if work is None:
                return outcome
            inline = work.inline
            # This worker holds the calls' leases (their rows name it) until the round that feeds their results,
            # so a call longer than a lease is not taken for a crash; if the worker dies, the leases run out.
            leases.hold([call.lease for call in inline])
            for call in inline:
                call.execute()
            if not inline and not work.more:
                return outcome
    finally:
        leases.release([call.lease for call in inline])


def _round(run_id: int, arrived: list[RunInput],
           completion: Completion | None) -> tuple[Round | None, Outcome | None]:
    recorded = None
    try:
        # On PostgreSQL the round's BEGIN, lock and read of due inputs go in one round trip, its writes in
        # another, then the COMMIT. Code in a round must not read the row count of a write (see store.pipeline).
        with transaction.atomic(), store.pipeline():
            for item in arrived:
                item.run_id = run_id
            due_by = timezone.now() if completion is None else None  # a completion is recorded before the read
            run, inputs = store.open_round(run_id, arrived=arrived, due_by=due_by, limit=BATCH)
            if completion is not None:
                recorded = record_completion(run, completion)
                if recorded is not Outcome.ACCEPTED:
                    return None, recorded
            if run.finished:
                return None, recorded
            if inputs is None:
                inputs = store.due_inputs(run.pk, timezone.now(), BATCH)
            if not inputs:
                _set_wake(run)
                return None, recorded
            work = Round(run, bridge.interpreter_of(run), timezone.now())
            for _, _, event in inputs:
                work.feed_input(event)
            work.flush([pk for pk, _, _ in inputs], full_batch=len(inputs) == BATCH)
            # Before the commit: its on_commit work may advance this run again in this process (django-q2's
            # sync mode), and must find the cache as this round leaves it. A failed commit forgets it below.
            bridge.remember(run, work.interpreter)
    except BaseException:
        bridge.forget(run_id)
        raise
    return work, recorded


def _set_wake(run: Run) -> None:
    store.execute([store.updating(Run, {}, computed={"wake_at": store.next_due_sql(run.pk)}, id=run.pk)])


class Round:
    """One transaction's worth of events for one run, and what they lead to."""

    def __init__(self, run: Run, interpreter, now):
        self.run = run
        self.interpreter = interpreter
        self.workflow = interpreter.workflow
        self.now = now
        self.effects = Effects(run, now)
        self.approvals_before = {a["id"]: a["status"] for a in interpreter.state.approvals}
        self.timers_before = set(interpreter.state.timers)
        self.fed = 0
        self.more = False
        self.dispatcher = dispatch.Dispatcher(self.effects, self.workflow, interpreter.state)

    @property
    def inline(self) -> list[dispatch.InlineCall]:
        return self.effects.inline

    # -- feeding -----------------------------------------------------------------

    def feed_input(self, event: dict) -> None:
        self.feed(ev.event_from_json(_with_decider_id(event)))
        queued = self.effects.next_events
        while queued:
            self.feed(queued.pop(0))

    def feed(self, event) -> None:
        effects = self.effects
        try:
            commands = self.interpreter.advance(event)
        except EventRejected as exc:
            step = getattr(event, "step", "") or ""
            said = event.to_json()
            if isinstance(event, ev.ReplyGiven):  # a reply nobody took is streamed to every watcher: no text
                said = {**{k: v for k, v in said.items() if k != "text"}, **reply_detail(event.text)}
            effects.log("rejected", step, {"event": said, "reason": str(exc)})
            if isinstance(event, ev.ApprovalDecided):
                # A timeout or a halt ended the approval first; its row says so (written from the interpreter).
                effects.audit(codes.APPROVAL_DECISION_TOO_LATE, step=step, actor=_decider(event),
                              detail={"decision": event.decision, "reason": str(exc)})
            elif isinstance(event, ev.ReplyGiven):
                # A timeout, a cancel or a halt ended the request first: the person is told the reply came too late.
                effects.audit(codes.APPROVAL_REPLY_TOO_LATE, step=step, actor=_decider(event),
                              detail={**reply_detail(event.text), "reason": str(exc)})
            return
        self.fed += 1
        effects.log(bridge.INPUT, getattr(event, "step", "") or "", event.to_json())
        if isinstance(event, ev.ApprovalDecided):
            self._audit_decided(event)
        elif isinstance(event, ev.ReplyGiven):
            self._audit_answered(event)
        if isinstance(event, ev.StepFinished):
            self.dispatcher.record_spend(event)
        for command in commands:
            _APPLY[type(command)](self, command)

    # -- commands -----------------------------------------------------------------------

    def _step_changed(self, command: cmd.StepChanged) -> None:
        self.effects.touch_step(command.step)
        self.effects.log("step", command.step, step_events.step_data(command, self.interpreter.state))

    def _request_approval(self, command: cmd.RequestApproval) -> None:
        effects, state = self.effects, self.interpreter.state
        st = state.steps.get(command.step)  # None: a start hold, which names no step
        attempt = st.attempt if st is not None else 0
        row = Approval(
            run=self.run, key=command.approval, step=command.step, attempt=attempt, kind=command.kind,
            options=list(command.options), message=command.message, approvers=list(command.approvers),
            requested_at=self.now)
        data = {"approval": command.approval, "kind": command.kind, "status": Approval.PENDING,
                "options": list(command.options), "message": command.message}
        detail = {"kind": command.kind, "message": command.message}
        if command.kind == Approval.REPLY:
            # The request shows the iteration it follows; its message may quote earlier replies, so the audit
            # names the iteration instead.
            record = next((a for a in reversed(state.approvals) if a["id"] == command.approval), {})
            row.iteration = record.get("iteration") or st.iteration
            row.output = (st.history[-1].get("stdout") or "") if st.history else ""
            data["iteration"] = row.iteration
            detail = {"kind": command.kind, "iteration": row.iteration}
        effects.request_approval(row)
        effects.log("approval", command.step, data)
        effects.audit(codes.APPROVAL_REQUESTED, step=command.step, attempt=attempt, detail=detail)

    def _audit_decided(self, event: ev.ApprovalDecided) -> None:
        """What the run made of a person's decision, in their name (the request was audited when made)."""
        record = next(a for a in reversed(self.interpreter.state.approvals)
                      if a["step"] == event.step and a["decision"] == event.decision and a["status"] != "pending")
        self.effects.audit(DECIDED[event.decision], step=event.step, attempt=record["attempt"],
                           actor=_decider(event),
                           detail={"kind": record["kind"], "decision": event.decision, "comment": event.comment or ""})

    def _audit_answered(self, event: ev.ReplyGiven) -> None:
        """The reply the run took, in the name of who gave it: its length and digest, never its text."""
        record = next(a for a in reversed(self.interpreter.state.approvals)
                      if a["step"] == event.step and a["kind"] == Approval.REPLY and a["status"] == Approval.ANSWERED)
        self.effects.audit(codes.APPROVAL_ANSWERED, step=event.step, attempt=record["attempt"],
                           actor=_decider(event),
                           detail={"kind": Approval.REPLY, "iteration": record.get("iteration"),
                                   **reply_detail(event.text)})

    def _schedule_timer(self, command: cmd.ScheduleTimer) -> None:
        due_at = to_datetime(command.fire_at)
        self.effects.add_input(inbox.timer(command.timer), ev.TimerFired(command.timer, at=command.fire_at),
                               due_at=due_at)
        if command.purpose == "approval_timeout":
            for approval in self.effects.approvals:  # requested just before, in the same advance
                if approval.step == command.step:
                    approval.expires_at = due_at

    def _cancel_step(self, command: cmd.CancelStep) -> None:
        effects = self.effects
        effects.set_step(command.step, **leases.revoked(effects.next_fence()))
        effects.drop_inline(command.step)
        gateways.cancel_taken(effects, command)  # before the row's lease is revoked: a gateway that took it is told
        self.dispatcher.release(command)
        effects.audit(codes.STEP_CANCELLED, step=command.step, attempt=command.attempt,
                      detail={"reason": command.reason})

    def _finish_run(self, command: cmd.FinishRun) -> None:
        run, effects = self.run, self.effects
        run.status, run.error, run.error_code = command.status, command.error, command.error_code
        run.finished_at = self.now
        effects.log("run", "", {"status": command.status, "error": command.error, "error_code": command.error_code})
        effects.audit(FINISHED[command.status],
                      detail={"error": command.error, "error_code": command.error_code})
        if run.parent_id is not None:
            children.report_to_parent(effects, self.interpreter.state.variables)

    def _start_child(self, command: cmd.StartChild) -> None:
        children.start_child(self.effects, command)

    def _cancel_child(self, command: cmd.CancelChild) -> None:
        children.cancel_child(self.effects, command)

    # -- writing ----------------------------------------------------------------------

    def flush(self, processed: list[int], *, full_batch: bool) -> None:
        """Write the round; everything but approvals goes as one batch of statements."""
        run, state, effects = self.run, self.interpreter.state, self.effects
        self._write_approvals(state)
        # A timer the interpreter no longer wants would only be ignored when it fires; retire it with the
        # inputs fed, so the run neither wakes for it nor looks busy.
        dropped = [inbox.timer(t) for t in self.timers_before - set(state.timers)]
        writes = store.retiring_inputs(run.pk, processed, dropped, self.now)
        new_inputs = [item for item in effects.inputs
                      if (timer := inbox.timer_of(item.key)) is None or timer in state.timers]
        writes += store.inserting(new_inputs, ignore_conflicts=True)
        writes += [self._step_write(state, step, extra) for step, extra in effects.step_fields.items()]
        if run.started_at is None and state.started_at is not None:
            run.started_at = to_datetime(state.started_at)
            effects.audit(codes.RUN_RUNNING)
        step_events.add_sentences(self.workflow, state, effects.events)
        writes += store.inserting(effects.events) + store.inserting(effects.audits)
        if not run.finished:
            run.status = state.status
        run.inputs_fed += self.fed
        run.progressed_at = self.now
        # This worker goes on at once when an input is already due; otherwise the clock wakes the run.
        self.more = full_batch or any(item.due_at <= self.now for item in new_inputs)
        values = {name: getattr(run, name) for name in ("status", "error", "error_code", "started_at", "finished_at",
                                                        "inputs_fed", "progressed_at", "fences")}
        computed = None
        if self.more or run.finished:
            values["wake_at"] = None
        else:
            computed = {"wake_at": store.next_due_sql(run.pk)}
        writes.append(store.updating(Run, values, computed=computed, id=run.pk))
        store.execute(writes)
        self._checkpoint()
        for callback in effects.after_commit:
            transaction.on_commit(callback)
        if effects.events:
            run_id, kinds = run.pk, {event.kind for event in effects.events}
            transaction.on_commit(lambda: live.wake(run_id, approvals="approval" in kinds, runs="run" in kinds))

    def _step_write(self, state, step: str, extra: dict) -> store.Statement:
        st = state.steps[step]
        fields = dict(status=st.status, wait=st.wait, attempt=st.attempt, iteration=st.iteration,
                      outputs=st.outputs, stdout=st.stdout or "", error=st.error, error_code=st.error_code,
                      tokens=st.tokens, cost=st.cost, started_at=to_datetime(st.started_at),
                      finished_at=to_datetime(st.finished_at), updated_at=self.now)
        if st.status != "running":
            fields.update(leases.ENDED)
        fields.update(extra)
        return store.updating(StepResult, fields, run_id=self.run.pk, step=step)

    def _write_approvals(self, state) -> None:
        """Approval rows follow the interpreter's records: this is the only writer of their status."""
        if self.effects.approvals:
            Approval.objects.bulk_create(self.effects.approvals, ignore_conflicts=True)
        ended = [a for a in state.approvals
                 if a["status"] != Approval.PENDING and self.approvals_before.get(a["id"]) != a["status"]]
        if not ended:
            return
        deciders = _deciders(ended)
        for record in ended:
            decided_at = to_datetime(record.get("decided_at")) or self.now
            by_id = deciders.get(record["id"])
            fields = dict(status=record["status"], decision=record.get("decision"),
                          comment=record.get("comment") or "", decided_at=decided_at, decided_by_id=by_id)
            data = {"approval": record["id"], "status": record["status"], "decision": record.get("decision"),
                    "by": record.get("by") if by_id is not None else None, "by_id": by_id}
            if record["status"] == Approval.ANSWERED:
                # The record has no text: the step's history entry the reply followed keeps it.
                fields["reply"] = data["reply"] = _reply_text(state, record)
                data["iteration"] = record.get("iteration")
            Approval.objects.filter(run=self.run, key=record["id"]).update(**fields)
            self.effects.log("approval", record["step"], data)

    def _checkpoint(self) -> None:
        run = self.run
        every = max(CHECKPOINT_EVERY, len(self.workflow.steps))
        crossed = run.inputs_fed // every > (run.inputs_fed - self.fed) // every
        if not (crossed or run.finished) or not self.fed:
            return
        event_id = RunEvent.objects.filter(run=run).aggregate(last=Max("id"))["last"] or 0
        Checkpoint.objects.create(run=run, inputs_fed=run.inputs_fed, event_id=event_id,
                                  state=self.interpreter.state.to_json(), created_at=self.now)
        stale = list(Checkpoint.objects.filter(run=run).order_by("-inputs_fed")
                     .values_list("pk", flat=True)[KEEP_CHECKPOINTS:])
        if stale:
            Checkpoint.objects.filter(pk__in=stale).delete()


# The audit code of each decision once the run has taken it.
DECIDED = {"approve": codes.APPROVAL_APPROVED, "reject": codes.APPROVAL_REJECTED,
           "retry": codes.APPROVAL_ESCALATION_RETRY, "skip": codes.APPROVAL_ESCALATION_SKIP,
           "abort": codes.APPROVAL_ESCALATION_ABORT}
# The audit code of each way a run ends.
FINISHED = {RunStatus.COMPLETED: codes.RUN_COMPLETED, RunStatus.FAILED: codes.RUN_FAILED,
            RunStatus.CANCELLED: codes.RUN_CANCELLED}


def _reply_text(state, record: dict) -> str:
    st = state.steps.get(record["step"])
    entry = next((h for h in reversed(st.history) if h.get("reply_id") == record["id"]), None) if st else None
    return entry["reply"] if entry is not None else ""


def _decider(event: ev.ApprovalDecided | ev.ReplyGiven) -> tuple[str, int | None]:
    return (event.by or SYSTEM), event.by_id


def _deciders(records: list[dict]) -> dict[str, int]:
    """Approval id -> the user who decided it: the id the decision carried, if that user still exists."""
    ids = {a["id"]: a["by_id"] for a in records if a.get("by_id") is not None}
    if not ids:
        return {}
    existing = set(get_user_model().objects.filter(pk__in=set(ids.values())).values_list("pk", flat=True))
    return {key: user_id for key, user_id in ids.items() if user_id in existing}


def _with_decider_id(event: dict) -> dict:
    """A decision put in the inbox before decisions carried the person's id names them by username only: find
    the id once, when it is fed (the system is no user)."""
    if event.get("type") != "ApprovalDecided" or "by_id" in event:
        return event
    by = event.get("by")
    found = None
    if by and by != SYSTEM:
        found = get_user_model().objects.filter(username=by).values_list("pk", flat=True).first()
    return {**event, "by_id": found}


_APPLY = {
    cmd.Dispatch: lambda r, c: r.dispatcher.dispatch(c),
    cmd.RequestApproval: Round._request_approval,
    cmd.ScheduleTimer: Round._schedule_timer,
    cmd.CancelStep: Round._cancel_step,
    cmd.StepChanged: Round._step_changed,
    cmd.FinishRun: Round._finish_run,
    cmd.StartChild: Round._start_child,
    cmd.CancelChild: Round._cancel_child,
}
