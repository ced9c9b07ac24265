"""The Spend page: what the calls cost, with their tokens, grouped by workflow, agent, model and month, over a
range of months (`from` and `to`, YYYY-MM, both included)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from forge.governance import spend
from forge.console.filters import Filters
from forge.console.views.pages import require_view

TITLES = {"workflow": "By workflow", "agent": "By agent", "model": "By model", "month": "By month"}


@login_required
def spend_page(request):
    require_view(request)  # who sees the dashboard (its spend card) sees this page
    given = Filters(request.GET)
    since = given.month("from")
    until = given.month("to", end=True)
    if since is not None and until is not None and since >= until:
        given.problems.append("from must be a month on or before to")
    for problem in given.problems:
        messages.error(request, problem)
    groups = [] if given.problems else [(by, TITLES[by], spend.grouped(by, since, until)) for by in spend.GROUPS]
    total = None if given.problems else spend.spent(since, until)
    return render(request, "console/spend.html", {
        "nav": "spend", "filters": given.values, "groups": groups, "total": total},
        status=400 if given.problems else 200)
