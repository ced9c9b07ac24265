"""Logging in for a token: `POST /api/v1/auth/token` with a user name and password answers a new personal token,
made and audited as on My tokens. Wrong credentials of every kind are one 401; failures count in django-axes'
store, with the console's login page, and a locked-out account or address is a 429 problem with Retry-After."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from forge.accounts.models import ApiToken, LoginFailure, TokenPolicy
from forge.accounts.tokens import service_account_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from tests.forge.accounts.conftest import WRONG, clock, log_in  # noqa: F401 - clock is a fixture
from tests.forge.api.calls import events, problem
from tests.forge.api.infra import fresh_rate_windows  # noqa: F401 - the fixture is used

pytestmark = pytest.mark.django_db
URL = "/api/v1/auth/token"
LOGIN = {"username": "olive", "password": "pw-olive", "name": "laptop", "scopes": ["runs:read", "runs:write"]}


def login(body, *, address: str = "10.0.0.1", key: str | None = None, client: Client | None = None, **meta):
    if key is not None:
        meta["HTTP_IDEMPOTENCY_KEY"] = key
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return (client or Client()).post(URL, data, content_type="application/json", REMOTE_ADDR=address, **meta)


def as_bearer(secret: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_a_person_logs_in_for_a_token_shown_once_that_signs_in_as_them(operator):
    before = timezone.now()
    answer = login(LOGIN)
    assert answer.status_code == 201, answer.content
    made = answer.json()
    secret = made["secret"]
    assert secret.startswith("forge_pat_") and made["prefix"] == secret[:16]
    assert (made["owner"], made["name"], made["scopes"]) == ("olive", "laptop", ["runs:read", "runs:write"])
    expires = ApiToken.objects.get().expires_at
    assert timedelta(days=90) <= expires - before <= timedelta(days=90, minutes=1)  # 90 days by default
    assert answer["RateLimit-Policy"].startswith('"default";q=')  # counted as every API request
    me = as_bearer(secret).get("/api/v1/me").json()
    assert (me["username"], me["token"]["prefix"]) == ("olive", made["prefix"])
    (event,) = events(codes.TOKEN_CREATED)
    assert event.actor_id == operator.pk and event.token_id is None
    assert event.detail["scopes"] == ["runs:read", "runs:write"] and event.detail["days"] == 90
    assert "pw-olive" not in json.dumps(event.detail) and secret not in json.dumps(event.detail)
    operator.refresh_from_db()
    assert operator.last_login is not None and operator.last_login >= before  # a login, without a session
    assert "sessionid" not in answer.cookies


def test_days_are_taken_within_the_policy_and_refused_past_it(operator):
    assert login({**LOGIN, "days": 7}).status_code == 201
    assert ApiToken.objects.get().expires_at - timezone.now() <= timedelta(days=7)
    TokenPolicy.objects.create(max_days=30)
    refused = problem(login({**LOGIN, "days": 31}), 422)
    assert refused["code"] == "days_out_of_range" and "from 1 to 30 days" in refused["detail"]
    assert ApiToken.objects.count() == 1


def test_wrong_password_and_unknown_user_are_the_same_401_and_both_count(operator):
    wrong = login({**LOGIN, "password": WRONG})
    unknown = login({**LOGIN, "username": "nobody"})
    bodies = [problem(wrong, 401), problem(unknown, 401)]
    assert bodies[0] == bodies[1] and bodies[0]["code"] == "login_failed"
    assert bodies[0]["type"] == "https://forge.invalid/problems/unauthenticated"
    assert not ApiToken.objects.exists() and not events(codes.TOKEN_CREATED)
    assert sorted(LoginFailure.objects.values_list("username", "failures_since_start")) == [
        ("nobody", 1), ("olive", 1)]
    assert WRONG not in json.dumps(list(LoginFailure.objects.values()), default=str)  # nothing posted is kept


def test_an_inactive_person_cannot_log_in_even_with_the_right_password(operator):
    User.objects.filter(pk=operator.pk).update(is_active=False)
    body = problem(login(LOGIN), 401)
    assert body == problem(login({**LOGIN, "username": "nobody"}), 401)
    assert not ApiToken.objects.exists()


def test_a_service_account_has_no_password_to_log_in_with(admin_user):
    service_account_create(user=admin_user, username="robot")
    for password in ("", "!", "robot"):
        answer = login({**LOGIN, "username": "robot", "password": password})
        assert answer.status_code in (400, 401) and not ApiToken.objects.exists(), answer.content
    assert problem(login({**LOGIN, "username": "robot", "password": "anything"}), 401)["code"] == "login_failed"


def test_the_token_has_the_scopes_asked_but_acts_within_the_persons_groups(db):
    User.objects.create_user("nemo", password="pw-nemo")  # in no group
    answer = login({**LOGIN, "username": "nemo", "password": "pw-nemo", "scopes": ["governance:admin"]})
    assert answer.status_code == 201  # as on My tokens: a scope is the token's, the groups the person's
    refused = problem(as_bearer(answer.json()["secret"]).put(
        "/api/v1/kill-switch", json.dumps({"engaged": True, "reason": "x"}), content_type="application/json"), 403)
    assert refused["type"].endswith("/forbidden")


def test_failures_through_the_api_lock_the_account_from_the_address_with_a_problem(operator, clock):
    statuses = [login({**LOGIN, "password": WRONG}).status_code for _ in range(5)]
    assert statuses == [401] * 4 + [429]  # the fifth failure locks, as the console's fifth does
    refused = login(LOGIN)  # the right password, refused before it is checked
    body = problem(refused, 429)
    assert refused["Retry-After"] == "900" and body["retry_after"] == 900
    assert body["type"] == "https://forge.invalid/problems/rate-limited" and body["code"] == "login_locked_out"
    assert body["detail"].startswith("Too many failed log-ins for this user name from your address. Try again")
    assert not ApiToken.objects.exists()
    assert len(events(codes.LOGIN_LOCKED_OUT)) == 1
    assert login(LOGIN, address="10.0.0.2").status_code == 201  # from elsewhere the account still logs in
    clock.advance(minutes=14, seconds=59)
    assert login(LOGIN).status_code == 429
    clock.advance(seconds=1)
    assert login(LOGIN).status_code == 201


def test_the_console_and_the_api_count_the_same_failures(operator, clock):
    for _ in range(4):
        assert login({**LOGIN, "password": WRONG}).status_code == 401
    assert log_in(Client(), "olive", WRONG).status_code == 429  # the console's page: the fifth failure locks
    assert login(LOGIN).status_code == 429
    clock.advance(minutes=15)
    for _ in range(5):
        log_in(Client(), "olive", WRONG)
    refused = login(LOGIN)
    assert refused.status_code == 429 and refused["Content-Type"].startswith("application/problem+json")


def test_a_login_through_the_api_forgets_the_accounts_failures_from_the_address(operator):
    for _ in range(4):
        login({**LOGIN, "password": WRONG})
    assert login(LOGIN).status_code == 201
    for _ in range(4):
        assert login({**LOGIN, "password": WRONG}).status_code == 401  # counted from zero again


def test_many_accounts_tried_from_one_address_lock_the_address(operator, settings):
    settings.FORGE_LOGIN_FAILURES_PER_ADDRESS = 3
    assert [login({**LOGIN, "username": f"guess-{n}"}).status_code for n in range(3)] == [401, 401, 429]
    body = problem(login(LOGIN), 429)
    assert body["detail"].startswith("Too many failed log-ins from your address.")


@pytest.mark.parametrize("body, field", [
    ({**LOGIN, "colour": "red"}, "colour"),
    ({k: v for k, v in LOGIN.items() if k != "username"}, "username"),
    ({k: v for k, v in LOGIN.items() if k != "password"}, "password"),
    ({k: v for k, v in LOGIN.items() if k != "name"}, "name"),
    ({k: v for k, v in LOGIN.items() if k != "scopes"}, "scopes"),
    ({**LOGIN, "username": 7}, "username"), ({**LOGIN, "password": ["pw-olive"]}, "password"),
    ({**LOGIN, "password": None}, "password"), ({**LOGIN, "name": {"a": 1}}, "name"),
    ({**LOGIN, "scopes": "runs:read"}, "scopes"), ({**LOGIN, "scopes": []}, "scopes"),
    ({**LOGIN, "scopes": ["runs:delete"]}, "scopes.0"), ({**LOGIN, "days": "30"}, "days"),
    ({**LOGIN, "days": 0}, "days"), ({**LOGIN, "days": 10**40}, "days"), ({**LOGIN, "days": True}, "days"),
    ({**LOGIN, "username": "o" * 151}, "username"), ({**LOGIN, "password": "p" * 4097}, "password"),
    ({**LOGIN, "name": "n" * 10_000}, "name"), ({**LOGIN, "username": "oli\x00ve"}, "username"),
    ({**LOGIN, "password": ""}, "password"), ({**LOGIN, "name": "  "}, "name"),
])
def test_a_bad_body_is_a_400_naming_the_field_and_counts_no_failure(operator, body, field):
    refused = problem(login(body), 400)
    assert field in refused["errors"], refused
    assert not ApiToken.objects.exists() and not LoginFailure.objects.exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'"olive"', b'{"username": "olive"',
                                 b'{"username": "\\ud800"}'])
def test_a_body_that_is_no_json_object_is_a_400(operator, raw):
    assert problem(login(raw), 400)["type"].endswith("/bad-request")
    assert not LoginFailure.objects.exists()


def test_a_huge_body_is_a_413(operator, settings):
    refused = login({**LOGIN, "name": "n" * (settings.FORGE_API_MAX_BODY_BYTES + 1)})
    assert refused.status_code in (400, 413) and refused["Content-Type"].startswith("application/problem+json")
    assert not ApiToken.objects.exists()


def test_a_session_or_a_token_sent_along_does_not_change_who_logs_in(operator, approver):
    session = Client()
    session.force_login(approver)  # and no CSRF token: a script's login needs none
    assert login(LOGIN, client=session).json()["owner"] == "olive"
    login({**LOGIN, "password": "pw-april", "username": "april", "scopes": ["runs:read"]})
    other = ApiToken.objects.get(user=approver)
    assert login(LOGIN, client=Client(HTTP_AUTHORIZATION=f"Bearer forge_pat_{other.prefix}")).status_code == 201
    assert ApiToken.objects.filter(user=operator).count() == 2


def test_a_retried_login_with_its_key_makes_one_token_and_does_not_show_it_again(operator):
    first = login(LOGIN, key="login-1")
    again = login(LOGIN, key="login-1")
    assert (first.status_code, again.status_code, again["Idempotent-Replayed"]) == (201, 201, "true")
    assert again.json()["id"] == first.json()["id"] and again.json()["secret"] is None
    assert first.json()["secret"].startswith("forge_pat_")
    assert ApiToken.objects.count() == 1 and len(events(codes.TOKEN_CREATED)) == 1
    refused = problem(login({**LOGIN, "name": "other"}, key="login-1"), 422)
    assert refused["code"] == "idempotency_key_reused"
    assert login(LOGIN, key="login-1", address="10.0.0.9").json()["secret"].startswith("forge_pat_")  # another's


def test_a_locked_out_answer_is_not_kept_for_the_key(operator, clock):
    for _ in range(5):
        login({**LOGIN, "password": WRONG})
    assert login(LOGIN, key="after-lockout").status_code == 429
    clock.advance(minutes=15)
    assert login(LOGIN, key="after-lockout").status_code == 201  # taken again, not the 429 replayed


def test_logging_in_is_rate_limited_as_any_request(operator, settings):
    settings.FORGE_API_RATE_LIMIT = 2
    assert [login({**LOGIN, "password": WRONG}).status_code for _ in range(2)] == [401, 401]
    refused = login(LOGIN)
    assert problem(refused, 429)["type"].endswith("/rate-limited") and int(refused["Retry-After"]) >= 1
    assert not ApiToken.objects.exists() and LoginFailure.objects.get().failures_since_start == 2
