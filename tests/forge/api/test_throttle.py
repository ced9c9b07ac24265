"""Rate limits: a fixed window per token (per person for a session, per address without either), announced on
every answer by `RateLimit-Policy` and `RateLimit`; past the limit, a 429 problem with `Retry-After`."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from forge.api import throttles
from tests.forge.api.infra import URLS, bearer, fresh_rate_windows, post  # noqa: F401 - the fixture is used

pytestmark = [pytest.mark.django_db, URLS]
RATE = re.compile(r'^"default";r=(\d+);t=(\d+)$')


class Clock:
    def __init__(self, now: float):
        self.now = now

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(1_800_000_000.0)  # a window's start: windows are whole multiples of their length
    monkeypatch.setattr(throttles, "time", clock)
    return clock


@pytest.fixture
def limit(settings):
    settings.FORGE_API_RATE_LIMIT = 3
    settings.FORGE_API_RATE_WINDOW_S = 60


def left_and_reset(response) -> tuple[int, int]:
    assert response["RateLimit-Policy"] == '"default";q=3;w=60'
    found = RATE.match(response["RateLimit"])
    assert found, response["RateLimit"]
    return int(found[1]), int(found[2])


def test_every_answer_says_what_is_left_and_the_fourth_is_429(limit, clock, operator):
    client = bearer(operator)
    clock.now += 15
    assert [left_and_reset(client.get("/api/v1/me")) for _ in range(2)] == [(2, 45), (1, 45)]
    refused = client.get("/api/v1/test/refuse?kind=NotFound")  # a refusal counts and says so too
    assert refused.status_code == 404 and left_and_reset(refused) == (0, 45)
    over = client.get("/api/v1/me")
    assert over.status_code == 429 and over["Content-Type"] == "application/problem+json"
    assert over.json()["type"].endswith("/rate-limited") and over["Retry-After"] == "45"
    assert left_and_reset(over) == (0, 45)
    assert post(client, "/api/v1/test/groups", {"name": "x"}).status_code == 429  # writes share the window


def test_a_new_window_starts_afresh(limit, clock, operator):
    client = bearer(operator)
    for _ in range(3):
        client.get("/api/v1/me")
    clock.now += 59.5
    over = client.get("/api/v1/me")
    assert over.status_code == 429 and over["Retry-After"] == "1"
    clock.now += 0.5
    answer = client.get("/api/v1/me")
    assert answer.status_code == 200 and left_and_reset(answer) == (2, 60)


def test_each_token_has_its_own_window(limit, clock, operator):
    first, second = bearer(operator), bearer(operator)
    for _ in range(3):
        first.get("/api/v1/me")
    assert first.get("/api/v1/me").status_code == 429
    assert second.get("/api/v1/me").status_code == 200


def test_a_session_counts_per_person_and_anonymous_requests_per_address(limit, clock, operator):
    one, two = Client(), Client()
    one.force_login(operator)
    two.force_login(operator)
    for _ in range(3):
        assert one.get("/api/v1/me").status_code == 200
    assert two.get("/api/v1/me").status_code == 429  # the same person in another browser
    anonymous = Client()
    for _ in range(3):
        assert anonymous.get("/api/v1/me").status_code == 401
    assert anonymous.get("/api/v1/me").status_code == 429
    assert Client(REMOTE_ADDR="10.1.2.3").get("/api/v1/me").status_code == 401
    bad_token = Client(REMOTE_ADDR="10.9.9.9", HTTP_AUTHORIZATION="Bearer forge_pat_nope")
    assert [bad_token.get("/api/v1/me").status_code for _ in range(4)] == [401, 401, 401, 429]


def test_the_default_limit_comes_from_the_settings(settings, operator):
    assert settings.FORGE_API_RATE_LIMIT == 600 and settings.FORGE_API_RATE_WINDOW_S == 60
    answer = bearer(operator).get("/api/v1/me")
    assert answer["RateLimit-Policy"] == '"default";q=600;w=60' and answer["RateLimit"].startswith('"default";r=599;')
