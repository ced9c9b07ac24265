"""A clock the login throttle reads (no sleeping through a cool-off), and logging in from a chosen address."""

from __future__ import annotations

from datetime import timedelta

import axes.handlers.proxy
import pytest
from django.utils import timezone

WRONG = "wrong-Pa55word-never-stored"


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch):
    """Django's now (rows' times, sessions) and axes' (a request's attempt time), frozen until advanced."""
    clock = Clock(timezone.now().replace(microsecond=0))
    monkeypatch.setattr(timezone, "now", clock)
    monkeypatch.setattr(axes.handlers.proxy, "now", clock)
    return clock


def log_in(client, username: str, password: str, *, path: str = "/login/", address: str = "10.0.0.1", **meta):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address, **meta)


def logged_in_as(client) -> str | None:
    """The id of the account the client's session holds, if any."""
    return client.session.get("_auth_user_id")
