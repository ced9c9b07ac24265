"""The console's pages. Each view reads through selectors and changes nothing; actions go through services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from forge.accounts.roles import can
from forge.console import dashboard as board
from forge.console.inbox import inbox_for_user


def require_view(request) -> None:
    if not can(request.user, "run.view"):
        raise PermissionDenied("you are in no group of this console: ask an admin to add you to one")


@login_required
def dashboard(request):
    require_view(request)
    return render(request, "console/dashboard.html", {"board": board.for_user(request.user)})


@login_required
def approvals(request):
    require_view(request)
    return render(request, "console/approvals.html", {"nav": "approvals", "items": inbox_for_user(request.user)})


def csrf_failure(request, reason=""):
    """Django's CSRF refusal in the console's own page (its default page has an inline style the CSP refuses)."""
    return render(request, "console/csrf_failure.html", {"reason": reason}, status=403)
