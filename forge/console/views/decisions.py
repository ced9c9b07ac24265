"""The run page's approval cards, for the person viewing: each pending approval of the run, with the form for
one they may decide and the reason for one they may not. The page renders them, and htmx reads them again
(decisions.html's reader, told by decisions.js) whenever the run's events say an approval was asked or decided,
so everyone watching sees the card and why without a reload."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from forge.runs.reads.inbox import ReplyAsk, reply_ask
from forge.console.views.pages import require_view
from forge.runs.models import Approval
from forge.runs.selectors import may_decide, runs_for_user


def decisions_for(user, run) -> list[tuple[Approval, str | None, ReplyAsk | None]]:
    """(approval, why `user` may not decide or answer it or None, a reply request's card facts or None) for each
    pending approval and reply request of `run`, oldest first."""
    pending = list(Approval.objects.filter(run=run, status=Approval.PENDING).order_by("id"))
    for approval in pending:
        approval.run = run  # may_decide reads who started it: the run in hand, not a query per card
    return [(approval, may_decide(user, approval), reply_ask(approval, run)) for approval in pending]


@login_required
def run_decisions(request, run_id: int):
    require_view(request)
    run = get_object_or_404(runs_for_user(request.user), pk=run_id)
    return render(request, "console/decisions.html", {"run": run, "decisions": decisions_for(request.user, run)})
