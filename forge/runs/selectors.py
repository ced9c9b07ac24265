"""Reading runs: their report (the local runner's JSON), whether they wait on people only, and who may decide
their approvals."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from engine.interpreter.state import RunStatus, StepStatus
from engine.report import RunOutcome, report
from forge.accounts.roles import can, may_approve, may_reply_as_member
from forge.runs import artifacts
from forge.runs.models import Approval, Run, RunInput, StepResult
from forge.runtime import bridge


def is_paused(run: Run) -> bool:
    """Nothing can happen until a person decides: an approval is pending, no step runs, no event is due."""
    if run.finished:
        return False
    return (Approval.objects.filter(run=run, status=Approval.PENDING).exists()
            and not StepResult.objects.filter(run=run, status=StepStatus.RUNNING).exists()
            and not RunInput.objects.filter(run=run, processed_at=None).exists()
            and not Run.objects.filter(parent=run).exclude(status__in=RunStatus.TERMINAL).exists())


def run_report(run: Run) -> dict[str, Any]:
    """The same JSON object as `python -m engine run --json` (spec section 12)."""
    run.refresh_from_db()
    interpreter = bridge.replica(run)
    paused = is_paused(run)
    return report(RunOutcome(interpreter.workflow, interpreter.state, paused, interpreter.state.now,
                             artifacts=artifacts.listing(run)))


def step_iterations(run: Run, step: str) -> list[dict[str, Any]]:
    """A loop step's iterations so far (spec section 9: iteration, attempt, stdout, outputs), from a copy of
    the run's state."""
    state = bridge.replica(run).state.steps.get(step)
    return list(state.history) if state is not None else []


def may_decide(user, approval: Approval) -> str | None:
    """Why `user` may not decide `approval` (or answer it, for a reply request), or None when they may (`user`
    None is the system)."""
    if user is None:
        return None
    if approval.kind == Approval.REPLY:
        return may_reply(user, approval)
    unseen = _cannot_see(user)
    if unseen:
        return unseen
    if not may_approve(user, approval.approvers):
        if approval.approvers:
            return f"this approval needs a member of {', '.join(sorted(approval.approvers))}"
        return "you are not an approver"
    if approval.run.started_by_id == user.pk and not settings.FORGE_ALLOW_SELF_APPROVAL:
        return ("you started this run, and self-approval is not allowed on this console: another approver must "
                "decide")
    return None


def _cannot_see(user) -> str | None:
    """Whoever cannot read approvals cannot read what they would decide or answer: the console refuses them its
    pages, and the CLI's --user and the inbox list must not let them act on it, or list it, either. (A token
    holding approvals:decide reads the approvals it may answer without reading runs: roles.SCOPE_INCLUDES.)"""
    if not getattr(user, "is_active", False):
        return "your account is inactive"
    if not can(user, "approval.view"):
        return "you are in no group of this console, so you may not see this run or act on it"
    return None


def may_read_approval(user, approval: Approval) -> bool:
    """Whether `user` may read `approval`: any approval of a run they may see; with a token that reads approvals
    but no runs (approvals:decide alone), those they may decide or answer, pending or not (a script reads its
    decision back)."""
    if not can(user, "approval.view"):
        return False
    if runs_for_user(user).filter(pk=approval.run_id).exists():
        return True
    if approval.kind == Approval.REPLY:
        return may_reply_as_member(user, approval.approvers) or approval.run.started_by_id == user.pk
    return may_approve(user, approval.approvers)


def may_reply(user, approval: Approval) -> str | None:
    """Why `user` may not answer the reply request `approval`, or None when they may: a member of its approvers
    (default Operators and Approvers; Admins always), or the person who started the run (a reply is not an
    approval, so starting the run is no conflict)."""
    if user is None:
        return None
    unseen = _cannot_see(user)
    if unseen:
        return unseen
    if may_reply_as_member(user, approval.approvers) or approval.run.started_by_id == user.pk:
        return None
    if approval.approvers:
        return f"this reply request needs a member of {', '.join(sorted(approval.approvers))} or the run's starter"
    return "only Operators, Approvers and the person who started the run may answer it"


def replies_so_far(run: Run, step: str) -> list[Approval]:
    """The answered reply requests of a loop step, by iteration (the answer is `reply`, who gave it
    `decided_by`)."""
    return list(Approval.objects.filter(run=run, step=step, kind=Approval.REPLY, status=Approval.ANSWERED)
                .select_related("decided_by").order_by("iteration", "id"))


def approvals_for_user(user) -> list[Approval]:
    """The pending approvals and reply requests `user` may answer, oldest first (`user` None: all of them)."""
    pending = (Approval.objects.filter(status=Approval.PENDING)
               .select_related("run__workflow", "run__version", "run__started_by")
               .defer("run__version__source").order_by("id"))  # up to 1 MiB each, on every page's badge
    # Which groups may decide lives in each row's JSON list, which SQLite cannot query: the few pending rows
    # are checked here, by the same rule that guards the decision.
    return [approval for approval in pending if may_decide(user, approval) is None]


def approvals_queryset_for_user(user) -> QuerySet[Approval]:
    """`approvals_for_user` as a queryset a list can page and filter (one query more: which rows is decided in
    Python, as above)."""
    return Approval.objects.filter(pk__in=[approval.pk for approval in approvals_for_user(user)])


def runs_for_user(user) -> QuerySet[Run]:
    """The runs `user` may see: every run for a member of a group (Operators, Approvers, Admins), none for
    anyone else. The one access check of the console's pages and live streams."""
    if not can(user, "run.view"):
        return Run.objects.none()
    return Run.objects.all()
