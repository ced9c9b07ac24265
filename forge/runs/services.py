"""Everything people do to runs: start, decide, reply, cancel, restart. Each checks permission and is audited."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.interpreter import ApprovalDecided, CancelRequested, ReplyGiven
from engine.interpreter.loops import reply_problem
from engine.interpreter.restart import restart_state
from engine.problems import WorkflowInvalid
from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.services import actor_of, audit
from forge.errors import Conflict, Forbidden, Invalid, Stale, TooLarge
from forge.runs.compiled import new_run_workflow, run_workflow
from forge.runs.creation import RunRefused, check_args_size, check_references, create_run
from forge.runs.models import Approval, Run, RunInput
from forge.runs.restart_plan import restart_plan
from forge.runs.selectors import may_decide
from forge.runtime import bridge, inbox, store
from forge.runtime.replies import reply_detail
from forge.runtime.queue import enqueue_advance
from forge.workflows.models import WorkflowVersion


class ServiceError(Invalid):
    """A request that cannot be carried out as asked; nothing changed."""


class ServiceConflict(Conflict, ServiceError):
    """The run or the approval is past the point where it takes this (ended, decided, timed out)."""


class ServiceTooLarge(TooLarge, ServiceError):
    """The run's arguments are past this installation's bound."""


def _require(user, action: str, what: str) -> None:
    if user is not None and not can(user, action):
        raise Forbidden(f"you may not {what}")


def _refused(exc: RunRefused) -> ServiceError:
    """The run's refusal as this module's, of the same kind."""
    return (ServiceTooLarge if isinstance(exc, TooLarge) else ServiceError)(exc.message, code=exc.code)


def _name(user) -> str:
    return actor_of(user)[0]


def run_start(*, user, version: WorkflowVersion, args: dict[str, Any] | None = None, args_from_text: bool = False,
              context_trust: int = 2, hold: dict[str, Any] | None = None) -> Run:
    """Start a run of `version`; `args` are checked against the document's `args` (and parsed, when text).

    `user` None is the system itself (the CLI on the server), which may do anything. `hold` holds the run
    before its first step until its start is approved (a schedule that requires approval).
    """
    _require(user, "run.start", "start runs")
    try:
        check_args_size(args or {})  # before parsing anything of them
        workflow, used = new_run_workflow(version)
        resolved = resolve_args(workflow.document, dict(args or {}), from_text=args_from_text)
        check_references(workflow)
    except RunRefused as exc:
        raise _refused(exc) from None
    except WorkflowInvalid as exc:
        raise ServiceError(f"{version} is not valid: {exc}") from None
    except ArgumentsInvalid as exc:
        raise ServiceError(str(exc)) from None
    with transaction.atomic():
        try:
            run = create_run(version=version, workflow=workflow, used_library=used, args=resolved, user=user,
                             context_trust=context_trust, hold=hold)
        except RunRefused as exc:
            raise _refused(exc) from None
        audit(codes.RUN_STARTED, user=user, run_id=run.pk,
              detail={"workflow": version.workflow.name, "version": version.number, "args": resolved})
        transaction.on_commit(lambda: enqueue_advance(run.pk))
    return run


def run_cancel(*, user, run: Run, reason: str = "") -> Run:
    _require(user, "run.cancel", "cancel runs")
    with transaction.atomic():
        run = store.lock_run(run.pk)
        if run.finished:
            raise ServiceConflict(f"run {run.pk} has already ended ({run.status})")
        now = timezone.now()
        event = CancelRequested(by=_name(user), reason=reason, at=now.timestamp())
        _, created = RunInput.objects.get_or_create(run=run, key=inbox.CANCEL, defaults={
            "event": event.to_json(), "due_at": now, "created_at": now})
        if not created:
            raise ServiceConflict(f"run {run.pk} is already being cancelled")
        audit(codes.RUN_CANCEL_REQUESTED, user=user, run_id=run.pk, detail={"reason": reason})
        transaction.on_commit(lambda: enqueue_advance(run.pk))
    return run


def run_restart(*, user, run: Run, step: str, plan: str | None = None) -> Run:
    """A new run of the same version from `step` (spec section 8); the old run must have ended.

    `plan` is the fingerprint of the restart plan the person was shown (forge/runs/restart_plan.py): when given,
    a plan that changed since is refused as Stale and nothing starts.
    """
    _require(user, "run.restart", "restart runs")
    if not run.finished:
        raise ServiceConflict(f"run {run.pk} is still {run.status}; only an ended run can be restarted")
    workflow = run_workflow(run)  # compiled with the library entries the run kept, as its replay is
    if step not in workflow.by_id:
        raise ServiceError(f"the workflow has no step {step!r}; its steps are {', '.join(workflow.by_id)}")
    if plan is not None and plan != restart_plan(run, step).fingerprint:
        raise Stale("The plan changed since it was shown: read it again before restarting.", code="stale_plan")
    previous = bridge.replica(run).state  # a copy rebuilt from the log: the live interpreter is the runtime's
    with transaction.atomic():
        try:
            new = create_run(version=run.version, workflow=workflow, used_library=run.library, args=run.args,
                             user=user, restarted_from=run, restart_from_step=step, context_trust=run.context_trust,
                             prepare=lambda run_id: restart_state(workflow, previous, step, run_id=run_id))
        except RunRefused as exc:
            raise _refused(exc) from None
        audit(codes.RUN_RESTARTED, user=user, run_id=new.pk, step=step,
              detail={"from_run": run.pk, "from_step": step})
        transaction.on_commit(lambda: enqueue_advance(new.pk))
    return new


def approval_decide(*, user, approval: Approval, decision: str, comment: str = "") -> Approval:
    """Ask for a decision on an approval or a governance hold, or retry / skip / abort an escalation.

    The decision is recorded as a request in the run's inbox (one per approval: the first one counts) and
    fed to the run; the Approval row changes when the run's round records what the interpreter made of it.
    """
    with transaction.atomic():
        run = store.lock_run(approval.run_id)
        approval = Approval.objects.get(pk=approval.pk)
        approval.run = run
        if approval.kind == Approval.REPLY:
            raise ServiceError(f"step {approval.step!r} asks for a reply, not a decision: answer it with a reply")
        problem = may_decide(user, approval)
        if problem:
            raise Forbidden(problem)
        if approval.status != Approval.PENDING:
            raise ServiceConflict(f"this {approval.kind} was already {approval.status}")
        if run.finished:
            raise ServiceConflict(f"run {approval.run_id} has ended ({run.status})")
        if decision not in approval.options:
            raise ServiceError(f"{decision!r} does not answer this {approval.kind}; "
                               f"choose one of {', '.join(approval.options)}")
        now = timezone.now()
        timed_out = _timed_out(approval, now)
        if timed_out is None:
            _request_decision(user, approval, decision, comment, now)
    if timed_out:
        raise ServiceConflict(f"this {approval.kind} timed out at {timed_out:%Y-%m-%d %H:%M:%S} UTC, before the "
                              f"decision; the step ends as timed out")
    approval.refresh_from_db()  # decided already if the run advanced in this process (django-q2's sync mode)
    return approval


def _timed_out(approval: Approval, now):
    """When the request ended unanswered by its step's timeout, or None. Nothing is then decided or answered: the
    run records the timeout (committing the caller's block only queues that)."""
    if approval.expires_at is None or approval.expires_at > now:
        return None
    run_id = approval.run_id
    transaction.on_commit(lambda: enqueue_advance(run_id))
    return approval.expires_at


def _request_decision(user, approval: Approval, decision: str, comment: str, now) -> None:
    """Put the decision in the run's inbox (inside the caller's transaction, which holds the run's lock)."""
    name, user_id = actor_of(user)  # the id credits the person; the system is no user (user_id None)
    event = ApprovalDecided(approval.step, decision, by=name, by_id=user_id, comment=comment or None,
                            at=now.timestamp())
    _, created = RunInput.objects.get_or_create(run_id=approval.run_id, key=inbox.decision(approval.key), defaults={
        "event": event.to_json(), "due_at": now, "created_at": now})
    if not created:
        raise ServiceConflict(f"this {approval.kind} has already been decided; the run is recording it")
    # Only asked here: the round audits what the run made of it (forge.runtime.rounds.DECIDED).
    audit(codes.APPROVAL_DECISION_REQUESTED, user=user, run_id=approval.run_id, step=approval.step,
          attempt=approval.attempt, detail={"kind": approval.kind, "decision": decision, "comment": comment})
    transaction.on_commit(lambda: enqueue_advance(approval.run_id))


def reply_give(*, user, approval: Approval, text: str) -> Approval:
    """Answer a loop's reply request (spec section 9) with free text, which starts the step's next iteration.

    Like a decision, the answer is put in the run's inbox (one per request: the first one counts) and the
    Approval row changes when the run's round takes it. The audit trail gets the text's length and digest;
    the text itself is kept with the run.
    """
    if not isinstance(text, str):
        raise ServiceError("a reply needs some text")
    with transaction.atomic():
        run = store.lock_run(approval.run_id)
        approval = Approval.objects.get(pk=approval.pk)
        approval.run = run
        if approval.kind != Approval.REPLY:
            raise ServiceError(f"this {approval.kind} is decided, not answered with a reply")
        problem = may_decide(user, approval)
        if problem:
            raise Forbidden(problem)
        if run.finished:
            raise ServiceConflict(f"run {approval.run_id} has ended ({run.status}); it takes no more replies")
        if approval.status != Approval.PENDING:
            what = "was already answered" if approval.status == Approval.ANSWERED else "expired unanswered"
            raise ServiceConflict(f"the reply request after iteration {approval.iteration} of {approval.step!r} "
                                  f"{what}; only a pending request takes a reply")
        problem = reply_problem(text)  # the interpreter's own rule (UTF-8, NUL, 1..65536 bytes)
        if problem:
            raise ServiceError(problem)
        now = timezone.now()
        timed_out = _timed_out(approval, now)
        if timed_out is None:
            _request_reply(user, approval, text, now)
    if timed_out:
        raise ServiceConflict(f"this reply request timed out at {timed_out:%Y-%m-%d %H:%M:%S} UTC, before the "
                              f"reply; the step ends as timed out")
    approval.refresh_from_db()  # answered already if the run advanced in this process (django-q2's sync mode)
    return approval


def _request_reply(user, approval: Approval, text: str, now) -> None:
    """Put the reply in the run's inbox (inside the caller's transaction, which holds the run's lock)."""
    name, user_id = actor_of(user)
    event = ReplyGiven(approval.step, text, by=name, by_id=user_id, at=now.timestamp())
    _, created = RunInput.objects.get_or_create(run_id=approval.run_id, key=inbox.reply(approval.key), defaults={
        "event": event.to_json(), "due_at": now, "created_at": now})
    if not created:
        raise ServiceConflict("this reply request has already been answered; the run is recording that answer")
    # Only asked here: the round audits the answer the run took (forge.approval.answered).
    audit(codes.APPROVAL_REPLY_REQUESTED, user=user, run_id=approval.run_id, step=approval.step,
          attempt=approval.attempt, detail={"kind": Approval.REPLY, "iteration": approval.iteration,
                                            **reply_detail(text)})
    transaction.on_commit(lambda: enqueue_advance(approval.run_id))
