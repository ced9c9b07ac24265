"""Who is acting in this request, for changes saved where no one passes the person along (Django's own models:
a user, a group, their permissions). Outside a request (the `forge` command, a migration) the system acts."""

from __future__ import annotations

from contextvars import ContextVar

_request: ContextVar = ContextVar("forge_acting_request", default=None)


class ActingPersonMiddleware:
    """Remembers the request while it is handled (after AuthenticationMiddleware, which sets request.user)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)


def acting_person():
    """The logged-in person of the request being handled, or None (the system)."""
    user = getattr(_request.get(), "user", None)
    return user if user is not None and user.is_authenticated else None
