"""The base of every API operation (docs/design/api.md, section 5): authentication, the action it needs,
idempotent writes, cursor pages and problem answers."""

from __future__ import annotations

from rest_framework.views import APIView


class ApiView(APIView):
    """One operation. `action` names what it needs (a `forge.accounts.roles` action, or a scope for reads that
    have no action): the authorisation matrix reads it."""

    action: str | None = None
