"""Signing in to the API with a token: `Authorization: Bearer forge_pat_…` (docs/design/api.md, section 4). The
request's user carries the token (`user.forge_token`), so the permission rules (forge/accounts/roles.py) add its
scopes to the owner's groups, read afresh on every request, and the audit names it."""

from __future__ import annotations

from datetime import timezone as tz

from django.utils import timezone
from rest_framework import authentication, exceptions

from forge.accounts.tokens import token_for_secret, token_touch
from forge.errors import Unauthenticated

KEYWORD = "Bearer"


def _when(moment) -> str:
    return f"{moment.astimezone(tz.utc):%Y-%m-%d %H:%M} UTC"


def _user_for(header: str):
    """The user a Bearer `header` signs in, carrying its token; None when the header is no Bearer one.

    Raises:
        Unauthenticated: the token is malformed, unknown, expired or revoked, or its owner is inactive.
    """
    parts = header.split()
    if not parts or parts[0].lower() != KEYWORD.lower():
        return None
    if len(parts) != 2:
        raise Unauthenticated("The Authorization header must be 'Bearer' and the token, with one space between.",
                              code="token_malformed")
    token = token_for_secret(parts[1])
    now = timezone.now()
    if token is None:
        raise Unauthenticated("The token is unknown: check that it was copied whole, or make a new one.",
                              code="token_unknown")
    if token.revoked_at is not None:
        raise Unauthenticated(f"The token {token.prefix}… was revoked on {_when(token.revoked_at)}.",
                              code="token_revoked")
    if token.expires_at <= now:
        raise Unauthenticated(f"The token {token.prefix}… expired on {_when(token.expires_at)}: make a new one.",
                              code="token_expired")
    user = token.user
    if not user.is_active:
        raise Unauthenticated(f"The token's owner, {user.get_username()}, is inactive.", code="owner_inactive")
    token_touch(token, now)
    user.forge_token = token
    return user


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """DRF's authentication by a Forge token; a request without a Bearer header is left to the next class."""

    def authenticate(self, request):
        try:
            user = _user_for(request.META.get("HTTP_AUTHORIZATION", ""))
        except Unauthenticated as exc:
            raise exceptions.AuthenticationFailed(exc.message, code=exc.code) from None
        return None if user is None else (user, user.forge_token)

    def authenticate_header(self, request) -> str:
        # Naming a scheme makes DRF answer a refused authentication 401 (with WWW-Authenticate), not 403.
        return f'{KEYWORD} realm="forge"'


def user_for_bearer(request):
    """The user a plain Django request's Bearer token signs in (for views outside DRF: the event stream); None
    without a Bearer header.

    Raises:
        Unauthenticated: the token is malformed, unknown, expired or revoked, or its owner is inactive.
    """
    return _user_for(request.META.get("HTTP_AUTHORIZATION", ""))
