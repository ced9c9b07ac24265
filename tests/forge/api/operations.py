"""The API's operations as the URL resolver routes them: each path under /api/v1/ and each HTTP method its view
handles, with the view that answers it (read by the authorisation matrix and the strict-input check)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from django.urls import URLPattern, URLResolver, get_resolver

API = "/api/v1/"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    route: str  # as routed, e.g. /api/v1/runs/<int:pk>
    view: type | None  # the ApiView, None for a view of another kind (the schema, the gateways' callback)

    @property
    def action(self) -> str | None:
        return getattr(self.view, "action", None)

    def __str__(self) -> str:
        return f"{self.method} {self.route}"


def _view_class(callback):
    if isinstance(callback, partial):
        callback = callback.func
    return getattr(callback, "view_class", None) or getattr(callback, "cls", None)


def _methods(callback) -> list[tuple[str, type | None]]:
    """Each method the view answers (not HEAD and OPTIONS, which every view answers as GET and as DRF does)."""
    by_method = getattr(callback, "forge_methods", None)
    if by_method is not None:
        return [(method, _view_class(view)) for method, view in by_method.items()]
    view = _view_class(callback)
    if view is None:  # a plain function view
        return [("GET", None)]
    handled = [m.upper() for m in METHODS if hasattr(view, m) and m in view.http_method_names]
    return [(method, view) for method in handled]


def _walk(patterns, prefix: str = ""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route, pattern.callback


def api_operations() -> list[Operation]:
    found = []
    for route, callback in _walk(get_resolver().url_patterns):
        route = "/" + route.lstrip("^")
        if not route.startswith(API) or route == API:  # API alone: the catch-all 404 of unknown paths
            continue
        found += [Operation(method, route, view) for method, view in _methods(callback)]
    return sorted(set(found), key=str)
