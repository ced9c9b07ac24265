"""The runs list and the run view."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from forge.accounts.roles import can
from forge.console import runs_list
from forge.console.run_head import head_context
from forge.runs.reads.run_view import run_view
from forge.console.step_actions import step_actions
from forge.runs.reads.step_panel import step_panel
from forge.console.views.decisions import decisions_for
from forge.console.views.pages import require_view
from forge.filters import OptionFilter
from forge.runs.filters import RunFilter
from forge.runs.models import RUN_STATUSES
from forge.runs.selectors import runs_for_user

PER_PAGE = 50
STEP_ROWS = 200  # rows of a run view's step table unless all are asked for: a page stays quick to draw


class RunsPageFilter(RunFilter):
    """The runs page's filters, and its tab (which the page applies after counting each tab's runs)."""

    tab = OptionFilter(options=runs_list.TABS, method="counted_first")

    def counted_first(self, runs, name, value):
        return runs


@login_required
def run_list(request):
    require_view(request)
    given = RunsPageFilter(request.GET, queryset=runs_for_user(request.user)
                           .select_related("workflow", "version", "started_by"))
    runs, problems = given.qs, given.problems
    sort, tab = given.cleaned("sort"), given.cleaned("tab")
    filters = {k: v for k, v in given.values.items() if k not in ("sort", "tab")}
    for problem in problems:
        messages.error(request, problem)
    if problems:
        runs = runs.none()
    tabs = runs_list.tabs(runs)
    page = Paginator(runs_list.in_tab(runs, tab), PER_PAGE).get_page(request.GET.get("page"))
    query = urlencode({k: v for k, v in filters.items() if v})
    in_tab = f"{query}&tab={tab}" if tab else query
    return render(request, "console/runs.html", {
        "nav": "runs", "page": page, "rows": runs_list.rows(request.user, list(page)), "tabs": tabs, "tab": tab,
        "filters": filters, "sort": sort, "statuses": [s for s, _ in RUN_STATUSES], "query": query,
        "query_tab": in_tab, "query_sorted": f"{in_tab}&sort={sort}" if in_tab else f"sort={sort}"},
        status=400 if problems else 200)


@login_required
def run_detail(request, run_id: int):
    require_view(request)
    run = get_object_or_404(runs_for_user(request.user).select_related("workflow", "version", "started_by"),
                            pk=run_id)
    view = run_view(run)
    user = request.user
    decisions = decisions_for(user, run)
    return render(request, "console/run.html", {
        "nav": "runs", "view": view, "run": run,
        "rows": view.nodes if request.GET.get("steps") == "all" else view.nodes[:STEP_ROWS],
        "graph": view.graph_json(), "decisions": decisions,
        "may_cancel": not run.finished and can(user, "run.cancel"),
        "may_restart": can(user, "run.restart"), **head_context(user, view)})


@login_required
def step_detail(request, run_id: int, step: str):
    """The step panel: a fragment the run view loads beside the graph."""
    require_view(request)
    run = get_object_or_404(runs_for_user(request.user), pk=run_id)
    panel = step_panel(run, step)
    if panel is None:
        raise Http404(f"run {run.pk} has no step {step[:64]!r}")
    return render(request, "console/step_panel.html", {"panel": panel, "run": run,
                                                        "actions": step_actions(request.user, run, step)})
