"""Rate limits (docs/design/api.md, section 5): per token, or per person signed in with a session, or per address
for a request with neither, a fixed window in Django's cache of FORGE_API_RATE_LIMIT requests every
FORGE_API_RATE_WINDOW_S seconds. Every API answer says where the client stands (the IETF draft's
`RateLimit-Policy` and `RateLimit` fields); over the limit, a 429 problem with `Retry-After`."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from forge.accounts.throttle import client_address

POLICY = "default"
STATE = "_forge_rate"  # where the request keeps its window's count for the answer's headers


def client_of(request) -> str:
    """Whose requests count together: the token, else the signed-in person, else the address."""
    user = getattr(request, "user", None)
    token = getattr(user, "forge_token", None)
    if token is not None:
        return f"token:{token.pk}"
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"address:{client_address(request) or 'unknown'}"


class ApiRateThrottle(BaseThrottle):
    """A fixed window: the count of the client's requests in the current window, kept in the cache."""

    def allow_request(self, request, view) -> bool:
        limit, window = settings.FORGE_API_RATE_LIMIT, settings.FORGE_API_RATE_WINDOW_S
        now = time.time()
        start = int(now // window * window)
        key = f"forge:api-rate:{client_of(request)}:{start}"
        cache.add(key, 0, timeout=window + 1)
        try:
            used = cache.incr(key)
        except ValueError:  # evicted between add and incr: this request opens the window again
            cache.set(key, 1, timeout=window + 1)
            used = 1
        reset = max(1, int(start + window - now + 0.999))
        setattr(request, STATE, (limit, window, max(0, limit - used), reset))
        self.reset = reset
        return used <= limit

    def wait(self) -> float | None:
        return self.reset


def rate_limit_headers(request) -> dict[str, str]:
    """The answer's RateLimit-Policy and RateLimit fields (none when the request was never counted)."""
    state = getattr(request, STATE, None)
    if state is None:
        state = getattr(getattr(request, "_request", None), STATE, None)
    if state is None:
        return {}
    limit, window, left, reset = state
    return {"RateLimit-Policy": f'"{POLICY}";q={limit};w={window}', "RateLimit": f'"{POLICY}";r={left};t={reset}'}
