"""`GET /api/v1/me`: who the request signs in as, and with which token."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from forge.accounts.models import ServiceAccount
from tests.forge.api.infra import URLS, bearer, fresh_rate_windows  # noqa: F401 - the fixture is used
from tests.forge.conftest import member

pytestmark = [pytest.mark.django_db, URLS]


def test_a_token_says_whose_it_is_its_scopes_and_expiry(approver):
    approver.groups.add(*member("x", "Operators").groups.all())
    answer = bearer(approver, "runs:read", "approvals:decide", days=10).get("/api/v1/me")
    assert answer.status_code == 200
    me = answer.json()
    assert me["username"] == "april" and me["groups"] == ["Approvers", "Operators"]
    assert me["service_account"] is False and me["superuser"] is False
    token = me["token"]
    assert token["scopes"] == ["runs:read", "approvals:decide"] and token["name"] == "tests"
    assert token["prefix"].startswith("forge_pat_") and "digest" not in token
    left = datetime.fromisoformat(token["expires_at"].replace("Z", "+00:00")) - timezone.now()
    assert timedelta(days=9, hours=23) < left <= timedelta(days=10)


def test_a_console_session_has_no_token(client, operator):
    client.force_login(operator)
    me = client.get("/api/v1/me").json()
    assert me == {"username": "olive", "groups": ["Operators"], "superuser": False, "service_account": False,
                  "token": None}


def test_a_service_account_says_so(admin_user):
    robot = User.objects.create_user("ci-bot")
    ServiceAccount.objects.create(user=robot, created_by=admin_user)
    assert bearer(robot, "runs:read", made_by=admin_user).get("/api/v1/me").json()["service_account"] is True


def test_groups_are_read_on_each_request(operator):
    client = bearer(operator)
    assert client.get("/api/v1/me").json()["groups"] == ["Operators"]
    operator.groups.clear()
    assert client.get("/api/v1/me").json()["groups"] == []


def test_anonymous_and_wrong_methods_are_problems(client, operator):
    assert client.get("/api/v1/me").status_code == 401
    assert bearer(operator).post("/api/v1/me", {}, content_type="application/json").status_code == 405
