"""`POST /api/v1/auth/token`: log in with a user name and password for a new personal token, for a script or curl
that has no token yet (docs/api.md, "Tokens").

The password is checked by `django.contrib.auth.authenticate`, so django-axes counts each failure in the store the
console's login page counts in, and refuses a locked-out account or address before any password is checked
(docs/console.md, "Logins"). Axes marks the request it is given: it is handed DRF's request, not Django's, so the
lockout is answered here as a problem, and axes' middleware, which reads Django's, does not swap in its own page.
The token is made by `token_create`, as on the My tokens page: audited, within the installation's longest life."""

from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.contrib.auth import authenticate, get_user_model, user_logged_in
from django.urls import path
from rest_framework.permissions import AllowAny

from forge.accounts.throttle import USERNAME_MAX, lockout_message, standing_of
from forge.accounts.tokens import token_create
from forge.api.base import ApiView
from forge.api.fields import Words
from forge.api.views.tokens import MadeOut, TokenIn
from forge.errors import RateLimited, Unauthenticated

PASSWORD_MAX = 4096  # far above any password a person types; bounds the work one request can ask of the hasher
REFUSED = "The user name or password is wrong, or the account cannot log in."


class LoginIn(TokenIn):
    """A person's user name and password, as on the console's login page, and the token to make (as on My
    tokens)."""

    username = Words(max_length=USERNAME_MAX)
    password = Words(max_length=PASSWORD_MAX, trim_whitespace=False)


class TokenLoginApi(ApiView):
    """Log in with a user name and password, and get a new personal token acting as that person, with the scopes
    asked (a token does what its scopes and its owner's groups allow). The answer holds the token's secret, which
    no other answer will show. Wrong credentials, an inactive account and a service account (which has no
    password) are the same 401; repeated failures lock the account from the address, or the address, as the
    console's login page does: 429 with Retry-After."""

    action = None  # no one is signed in yet: the body's credentials are the whole check
    authentication_classes: list = []  # neither a session (no CSRF to ask of a script) nor a token
    permission_classes = [AllowAny]
    secret_fields = ("secret",)
    success_status = 201
    Input = LoginIn
    Output = MadeOut

    def post(self, request):
        data = self.read(request)
        # DRF's request: axes marks it (axes_locked_out, its address and time), and reads the body's username.
        user = authenticate(request=request, username=data["username"], password=data["password"])
        if user is None:
            if getattr(request, "axes_locked_out", False):
                raise locked_out(request, {get_user_model().USERNAME_FIELD: data["username"]})
            raise Unauthenticated(REFUSED, code="login_failed")
        # A login as the console's: it forgets this account's failures from this address (forge/accounts/
        # throttle.py) and notes the time of the login; no session is made.
        user_logged_in.send(sender=type(user), request=request, user=user)
        token, secret = token_create(user=user, name=data["name"], scopes=data["scopes"], days=data.get("days"))
        token.secret = secret
        return self.answer(token)


def locked_out(request, credentials: dict) -> RateLimited:
    """The 429 of a locked-out login: until when, in the console's words, and Retry-After in seconds."""
    now = request.axes_attempt_time
    found = standing_of(request, credentials)
    until = found.until or now + get_cool_off()
    seconds = max(1, math.ceil((until - now).total_seconds()))
    return RateLimited(lockout_message(found.limits, until, now), code="login_locked_out", retry_after=seconds)


urlpatterns = [path("auth/token", TokenLoginApi.as_view(), name="auth-token")]
