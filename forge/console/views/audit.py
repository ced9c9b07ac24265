"""The audit trail: every audit event, filterable by run, person, code and date, newest first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from forge.audit.models import AuditEvent
from forge.console.filters import Filters
from forge.console.views.pages import require_view

PER_PAGE = 100


@login_required
def audit_list(request):
    require_view(request)
    events = AuditEvent.objects.all()
    given = Filters(request.GET)
    if (run := given.number("run")) is not None:
        events = events.filter(run_id=run)
    if actor := given.text("actor", limit=AuditEvent._meta.get_field("actor").max_length):
        events = events.filter(actor=actor)
    if code := given.text("code", limit=AuditEvent._meta.get_field("code").max_length):
        events = events.filter(code__startswith=code)
    if since := given.day("since"):
        events = events.filter(at__gte=since)
    if until := given.day("until", end=True):
        events = events.filter(at__lte=until)
    for problem in given.problems:
        messages.error(request, problem)
    if given.problems:
        events = events.none()
    page = Paginator(events.order_by("-at", "-id"), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "console/audit.html", {
        "nav": "audit", "page": page, "filters": given.values,
        "query": urlencode({k: v for k, v in given.values.items() if v})}, status=400 if given.problems else 200)
