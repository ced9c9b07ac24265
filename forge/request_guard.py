"""Control characters stop at the door: no view, form or database sees one from a request's address or form.

PostgreSQL refuses NUL in text and JSON, and no name, id, filter or field of Forge holds a control character,
so they are refused here, once, for every page (the console's, the admin's, the login's) rather than view
by view. A path that holds one names no page: 404. A query or form value (or name) that holds one: 400,
saying which. Tab, newline and carriage return pass in values, where free text holds them. A session
cookie that holds one is no session.
"""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.http import Http404, HttpResponse, HttpResponseBadRequest

from forge.errors import BadRequest, ForgeError, NotFound, problem_of

IN_PATH = re.compile(r"[\x00-\x1f\x7f]")
IN_VALUE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
API = "/api/"


def refusal(request, where: str, name: str, text: str) -> HttpResponse:
    """A 400 saying which value holds the character: a problem (RFC 9457) to the API's clients, text to others."""
    found = IN_VALUE.search(text).group()
    shown = name[:40].translate({c: "\ufffd" for c in range(32)})
    said = (f"The {where} {shown!r} holds a control character (U+{ord(found):04X}), which no field of Forge "
            f"accepts: send it without one.")
    if request.path_info.startswith(API):
        return problem(BadRequest(said, code="control_character"))
    return HttpResponseBadRequest(said + "\n", content_type="text/plain; charset=utf-8")


def problem(exc: ForgeError) -> HttpResponse:
    status, body = problem_of(exc)
    return HttpResponse(json.dumps(body), status=status, content_type="application/problem+json")


class ControlCharacterGuard:
    """Placed after CsrfViewMiddleware: a post without its token is refused for that first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if IN_PATH.search(request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")):
            # A session id holding one (a cookie may carry "\000") names no session, as an unknown id does;
            # looked up, it was a 500 on PostgreSQL. The fresh empty session has the cookie deleted.
            request.session = type(request.session)()
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        if IN_PATH.search(request.path_info):
            if request.path_info.startswith(API):
                return problem(NotFound("No operation has a control character in its address.", code="no_such_path"))
            raise Http404("no page has a control character in its address")
        sources = [("query parameter", request.GET)]
        # Views exempt from CSRF (the API) read their own body, which reading the form here would consume.
        if request.method == "POST" and not getattr(view, "csrf_exempt", False):
            sources.append(("form field", request.POST))
        for where, params in sources:
            for name, values in params.lists():
                for text in (name, *values):
                    if IN_VALUE.search(text):
                        return refusal(request, where, name, text)
        return None
