"""What a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE): the login page saying until when, or for
the API a JSON error; 429 with Retry-After either way."""

from __future__ import annotations

import math

from axes.helpers import get_client_username, get_cool_off
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

from forge.accounts.throttle import lockout_message, standing_of

API_PREFIX = "/api/"


def lockout_response(request, *_ignored) -> HttpResponse:
    # axes calls this with (request, response, credentials), but with (request, credentials) from its async
    # middleware: the credentials are read from the request, where its handler left them.
    credentials = getattr(request, "axes_credentials", None)
    now = request.axes_attempt_time
    found = standing_of(request, credentials)
    until = found.until or now + get_cool_off()
    message = lockout_message(found.limits, until, now)
    seconds = max(1, math.ceil((until - now).total_seconds()))
    if request.path.startswith(API_PREFIX):
        response = JsonResponse({"error": message, "retry_after": seconds}, status=429)
    else:
        form = AuthenticationForm(request, initial={"username": get_client_username(request, credentials) or ""})
        response = render(request, "console/login.html", {
            "form": form, "lockout": message, "next": request.POST.get("next", request.GET.get("next", ""))},
            status=429)
    response["Retry-After"] = str(seconds)
    return response

