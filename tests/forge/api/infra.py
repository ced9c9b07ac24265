"""Helpers of the API infrastructure's tests: tokens, and clients that send them."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client

from forge.accounts.roles import SCOPES
from forge.accounts.tokens import token_create

URLS = pytest.mark.urls("tests.forge.api.infra_urls")


def bearer(user, *scopes: str, days: int = 30, made_by=None) -> Client:
    """A client that signs in as `user` with a new token holding `scopes` (all of them when none is given), made
    by `made_by` (an Admin, for a service account) or `user`."""
    _token, secret = token_create(user=made_by or user, owner=user, name="tests", scopes=list(scopes or SCOPES),
                                  days=days)
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def post(client: Client, path: str, body, *, key: str | None = None, **extra):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    if key is not None:
        extra["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(path, data, content_type="application/json", **extra)


@pytest.fixture(autouse=True)
def fresh_rate_windows():
    """Rate windows live in the cache, which outlives a test's database: each test starts with none counted."""
    cache.clear()
    yield
    cache.clear()
