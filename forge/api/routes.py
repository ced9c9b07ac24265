"""One path, several operations: `by_method(get=RunListApi, post=RunStartApi)` hands each request to the
operation of its method (each stays its own ApiView with its own action, Input and Output), and the OpenAPI
document sees each operation (forge/api/schema.py reads `forge_methods`)."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpResponse

from forge.api.problems import HTTP_ONLY, PROBLEM_JSON
from rest_framework.exceptions import MethodNotAllowed


def by_method(**views) -> Callable:
    """A view that dispatches on the request's method to `views` (ApiView classes, or their `as_view()`
    callables); another method is a 405 problem naming the allowed ones."""
    handlers = {method.upper(): view.as_view() if isinstance(view, type) else view for method, view in views.items()}
    allowed = ", ".join(sorted(handlers) + ["OPTIONS"] + (["HEAD"] if "GET" in handlers else []))

    def dispatch(request, *args, **kwargs):
        method = "GET" if request.method == "HEAD" else request.method
        handler = handlers.get(method)
        if handler is None and method == "OPTIONS":
            handler = next(iter(handlers.values()))
        if handler is None:
            kind = HTTP_ONLY[MethodNotAllowed]
            body = {"type": kind.type, "title": kind.title, "status": kind.status,
                    "detail": f'Method "{request.method}" not allowed.'}
            return HttpResponse(json.dumps(body), status=405, content_type=PROBLEM_JSON, headers={"Allow": allowed})
        return handler(request, *args, **kwargs)

    dispatch.forge_methods = handlers
    dispatch.csrf_exempt = True  # as DRF's own views: SessionAuthentication enforces CSRF for session writes
    return dispatch
