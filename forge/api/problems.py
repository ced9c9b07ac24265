"""DRF's EXCEPTION_HANDLER: every refusal the API gives is an RFC 9457 problem (`application/problem+json`,
`{type, title, status, detail, code?, errors?}`), read from forge.errors' table; the few statuses only HTTP
has (405, 406, 415) have their rows here. An exception of no known kind is left to Django (a 500, logged)."""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpResponse, HttpResponsePermanentRedirect
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from forge.errors import (
    BadRequest, ForgeError, Forbidden, NotFound, Problem, RateLimited, TooLarge, Unauthenticated, problem_of)

PROBLEM_JSON = "application/problem+json"
BEARER_CHALLENGE = 'Bearer realm="forge"'

# HTTP's own refusals, which no service raises, so forge.errors' table has no kind for them.
HTTP_ONLY = {
    exceptions.MethodNotAllowed: Problem("method-not-allowed", 405, "Method not allowed", 2),
    exceptions.NotAcceptable: Problem("not-acceptable", 406, "Not acceptable", 2),
    exceptions.UnsupportedMediaType: Problem("unsupported-media-type", 415, "Unsupported media type", 2),
}


def flat_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as `{"field.sub.0": ["sentence", ...]}`; errors of the whole body under
    `non_field_errors`."""
    if isinstance(detail, dict):
        found: dict[str, list[str]] = {}
        for key, value in detail.items():
            found.update(flat_errors(value, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(detail, list) and any(isinstance(item, (dict, list)) for item in detail):
        found = {}
        for index, value in enumerate(detail):
            if value:
                found.update(flat_errors(value, f"{prefix}.{index}" if prefix else str(index)))
        return found
    items = detail if isinstance(detail, list) else [detail]
    return {prefix or api_settings.NON_FIELD_ERRORS_KEY: [str(item) for item in items]}


def validation_problem(detail: Any) -> BadRequest:
    """A serializer's errors as the 400 problem: `detail` names the first, `errors` holds them all."""
    errors = flat_errors(detail)
    field, messages = next(iter(errors.items()), (api_settings.NON_FIELD_ERRORS_KEY, ["The body is not valid."]))
    count = sum(len(each) for each in errors.values())
    more = f" (and {count - 1} more)" if count > 1 else ""
    where = "" if field == api_settings.NON_FIELD_ERRORS_KEY else f"{field}: "
    return BadRequest(f"{where}{messages[0]}{more}", code="invalid_fields", errors=errors)


def as_forge_error(exc: Exception) -> ForgeError | None:
    """The ForgeError kind a DRF or Django exception is, or None for the HTTP-only ones and the unknown."""
    if isinstance(exc, ForgeError):
        return exc
    if isinstance(exc, Http404):
        return NotFound(str(exc.args[0]) if exc.args and exc.args[0] else "Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        return Forbidden(str(exc.args[0]) if exc.args and exc.args[0] else "You may not do this.")
    if isinstance(exc, exceptions.ValidationError):
        return validation_problem(exc.detail)
    if isinstance(exc, exceptions.ParseError):
        return BadRequest(str(exc.detail), code="unparsable")
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return Unauthenticated(str(exc.detail), code=exc.get_codes() if isinstance(exc.get_codes(), str) else "")
    if isinstance(exc, exceptions.PermissionDenied):
        return Forbidden(str(exc.detail))
    if isinstance(exc, exceptions.NotFound):
        return NotFound(str(exc.detail))
    if isinstance(exc, exceptions.Throttled):
        wait = math.ceil(exc.wait or 1)
        return RateLimited(f"Too many requests: try again in {wait} s.", retry_after=wait)
    if isinstance(exc, exceptions.APIException) and exc.status_code == 413:
        return TooLarge(str(exc.detail))
    return None


def problem_response(exc: Exception) -> Response | None:
    """The problem answer of `exc` (a DRF Response rendered as JSON), or None for an exception of no kind."""
    headers: dict[str, str] = {}
    error = as_forge_error(exc)
    if error is not None:
        status, body = problem_of(error)
        if isinstance(error, RateLimited) and "retry_after" in error.extra:
            headers["Retry-After"] = str(math.ceil(error.extra["retry_after"]))
        if isinstance(error, Unauthenticated):
            headers["WWW-Authenticate"] = getattr(exc, "auth_header", None) or BEARER_CHALLENGE
    else:
        kind = next((row for cls, row in HTTP_ONLY.items() if isinstance(exc, cls)), None)
        if kind is None and isinstance(exc, exceptions.APIException):  # a DRF refusal of no kind above
            kind = Problem(str(exc.default_code).replace("_", "-"), exc.status_code, str(exc.default_detail), 2)
        if kind is None:
            return None
        status = kind.status
        body = {"type": kind.type, "title": kind.title, "status": status, "detail": str(exc.detail)}
    return Response(body, status=status, headers=headers, content_type=PROBLEM_JSON)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]."""
    response = problem_response(exc)
    if response is not None:
        set_rollback()
    return response


@csrf_exempt  # a write to no operation is a 404 problem, not the console's page for a missing CSRF token
def not_found(request, *args, **kwargs) -> HttpResponse:
    """Any /api/v1/ path no operation has: a 404 problem rather than the console's page (a read of a path that
    lacks only its final slash is sent there, as Django's APPEND_SLASH would)."""
    if request.method in ("GET", "HEAD") and not request.path.endswith("/"):
        try:
            slashed = resolve(request.path + "/")
        except Resolver404:
            slashed = None
        if slashed is not None and slashed.func is not not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    status, body = problem_of(NotFound(f"No operation at {request.path}.", code="no_such_path"))
    return HttpResponse(json.dumps(body), status=status, content_type=PROBLEM_JSON)
