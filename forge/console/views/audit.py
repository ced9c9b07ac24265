"""The audit trail: every audit event, filterable by run, person, code and date, newest first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from forge.audit.models import AuditEvent
from forge.console.views.pages import require_view
from forge.console.views.runs import day

PER_PAGE = 100


@login_required
def audit_list(request):
    require_view(request)
    q = request.GET
    filters = {"run": q.get("run", "")[:20], "actor": q.get("actor", "")[:150], "code": q.get("code", "")[:80],
               "since": q.get("since", ""), "until": q.get("until", "")}
    events = AuditEvent.objects.all()
    if filters["run"].isdigit():
        events = events.filter(run_id=int(filters["run"]))
    if filters["actor"]:
        events = events.filter(actor=filters["actor"])
    if filters["code"]:
        events = events.filter(code__startswith=filters["code"])
    if since := day(filters["since"]):
        events = events.filter(at__gte=since)
    if until := day(filters["until"], end=True):
        events = events.filter(at__lte=until)
    page = Paginator(events.order_by("-at", "-id"), PER_PAGE).get_page(q.get("page"))
    return render(request, "console/audit.html", {
        "nav": "audit", "page": page, "filters": filters,
        "query": urlencode({k: v for k, v in filters.items() if v})})
