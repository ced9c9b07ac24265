"""What the step panel offers for its step: its name and phase, a restart from it (an ended run, for those who
may restart) and a decision on its pending approval or an answer to its reply request (for those who may)."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse

from forge.accounts.roles import can
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run
from forge.runs.reads.inbox import ReplyAsk, reply_ask
from forge.runs.selectors import may_decide


@dataclass(frozen=True)
class StepActions:
    name: str
    phase: str
    restart_url: str  # "" when there is no restart to offer
    # each with why it may not be decided (or answered), and a reply request's card facts
    decisions: list[tuple[Approval, str | None, ReplyAsk | None]] = field(default_factory=list)


def step_actions(user, run: Run, step: str) -> StepActions:
    spec = run_workflow(run).by_id.get(step)
    restart = ""
    if spec is not None and run.finished and can(user, "run.restart"):
        restart = f"{reverse('console:restart', args=[run.pk])}?{urlencode({'step': step})}"
    pending = Approval.objects.filter(run=run, step=step, status=Approval.PENDING).select_related("run").order_by("id")
    return StepActions(name=(spec.model.name or "") if spec else "", phase=(spec.model.phase or "") if spec else "",
                       restart_url=restart, decisions=[(approval, may_decide(user, approval), reply_ask(approval, run))
                                                       for approval in pending])
