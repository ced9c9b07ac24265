"""The audit trail: every audit event, filterable by run, person, code and date, newest first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from forge.audit.filters import AuditFilter
from forge.audit.selectors import audit_for_user
from forge.console.views.pages import require_view

PER_PAGE = 100


@login_required
def audit_list(request):
    require_view(request)
    given = AuditFilter(request.GET, queryset=audit_for_user(request.user))
    events, problems = given.qs, given.problems
    for problem in problems:
        messages.error(request, problem)
    if problems:
        events = events.none()
    page = Paginator(events.order_by("-at", "-id"), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "console/audit.html", {
        "nav": "audit", "page": page, "filters": given.values,
        "query": urlencode({k: v for k, v in given.values.items() if v})}, status=400 if problems else 200)
