"""GET /live/status/: what this process's live sockets did (forge/console/socket_stats.py), for Admins."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from forge.accounts.roles import may_use_admin
from forge.console import socket_stats


@login_required
@require_GET
def live_status(request):
    if not may_use_admin(request.user):
        raise PermissionDenied("only Admins read the live sockets' counts")
    return JsonResponse({"sockets": socket_stats.snapshot()})
