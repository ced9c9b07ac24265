"""The console's pages. Each view reads through selectors and changes nothing; actions go through services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.shortcuts import render
from django.utils.log import log_response

from forge.accounts.roles import can
from forge.console.dashboard import page_for as dashboard_page
from forge.runs.reads.inbox import inbox_for_user
from forge.console.views import editor_api
from forge.errors import BadRequest, Forbidden, TooLarge


def require_view(request) -> None:
    if not can(request.user, "run.view"):
        raise Forbidden("you are in no group of this console: ask an admin to add you to one")


@login_required
def dashboard(request):
    require_view(request)
    return render(request, "console/dashboard.html", dashboard_page(request.user))


@login_required
def approvals(request):
    require_view(request)
    return render(request, "console/approvals.html", {"nav": "approvals", "items": inbox_for_user(request.user)})


def refused(request, exception=None):
    """A 403 in the console's layout, with the reason the person was refused and a way to log out."""
    return _error(request, exception, 403, "You may not open this page",
                  "you may not open this page: ask an admin if you need to")


def not_found(request, exception=None):
    """A 404 in the console's layout, saying what was not found."""
    return _error(request, exception, 404, "Not found", "there is no page at this address")


def bad_request(request, exception=None):
    """A 400 in the console's layout: a request Django could not read (a body over its size bound, a malformed
    one). Its own words name no internals: Django's exceptions say what a person sending a form cannot act on."""
    if editor_api.is_editor_api(request):
        if isinstance(exception, RequestDataTooBig):  # a form-encoded body the CSRF check read before the view
            return editor_api.refused(TooLarge("the body is larger than the console takes; nothing was changed",
                                               code="too_large"))
        return editor_api.refused(BadRequest("the request could not be read; nothing was changed", code="bad_request"))
    return _error(request, None, 400, "The request could not be read",
                  "the request was too large or malformed, and nothing was changed; a form's fields are bounded, so "
                  "this comes from a client that sent more than the console takes")


def _error(request, exception, status: int, title: str, default: str):
    said = exception.args[0] if exception is not None and exception.args else ""
    # a resolver's 404 says a dict, not words for people
    reason = said.rstrip(".") if isinstance(said, str) and said else default
    response = render(request, "console/error.html", {"title": title, "reason": reason, "status": status},
                      status=status)
    # One line in the log: Django's own line carries the exception's traceback, once per refused request.
    log_response("%s %s: %s (%s)", {400: "Bad Request", 403: "Forbidden"}.get(status, "Not Found"), request.path,
                 reason, request.user.get_username() if getattr(request, "user", None) else "-",
                 response=response, request=request, level="warning")
    return response


def csrf_failure(request, reason=""):
    """Django's CSRF refusal in the console's own page (its default page has an inline style the CSP refuses);
    the editor's JSON endpoints answer JSON."""
    if editor_api.is_editor_api(request):
        return editor_api.refused(Forbidden(f"the request has no valid CSRF token ({reason}): reload the page; "
                                            "nothing was changed", code="csrf"))
    return render(request, "console/csrf_failure.html", {"reason": reason}, status=403)
