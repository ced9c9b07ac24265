"""The tokens operations: my tokens (list, make, revoke) and the Admins' service accounts and their tokens. The
secret is in the answer that made it and in no other; every bad input is a problem that changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from forge.accounts.models import ApiToken, ServiceAccount
from forge.accounts.tokens import service_account_create, token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from tests.forge.api.calls import events, problem, send, signed_in, with_token
from tests.forge.api.infra import fresh_rate_windows  # noqa: F401 - the fixture is used

pytestmark = pytest.mark.django_db
MAKE = {"name": "CI deploys", "scopes": ["runs:read", "runs:write"], "days": 30}


def test_i_make_a_token_see_its_secret_once_and_sign_in_with_it(operator):
    answer = send(signed_in(operator), "POST", "me/tokens", MAKE)
    assert answer.status_code == 201
    made = answer.json()
    secret = made["secret"]
    assert secret.startswith("forge_pat_") and made["prefix"] == secret[:16] and made["owner"] == "olive"
    assert made["scopes"] == ["runs:read", "runs:write"] and made["revoked_at"] is None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    listed = send(client, "GET", "me/tokens")
    assert listed.status_code == 200 and secret not in listed.content.decode()
    (row,) = listed.json()["results"]
    assert row["id"] == made["id"] and "secret" not in row and "digest" not in row
    assert row["last_used_at"] is not None  # this very request
    assert events(codes.TOKEN_CREATED)[0].token_id is None  # made in a session


def test_my_list_holds_mine_only_newest_first(operator, approver):
    first, _ = token_create(user=operator, name="first", scopes=["runs:read"])
    second, _ = token_create(user=operator, name="second", scopes=["runs:read"])
    token_create(user=approver, name="theirs", scopes=["runs:read"])
    assert [t["name"] for t in send(signed_in(operator), "GET", "me/tokens").json()["results"]] == [
        "second", "first"]


@pytest.mark.parametrize("body, field", [
    ({**MAKE, "name": ""}, "name"), ({**MAKE, "name": "x" * 101}, "name"), ({**MAKE, "scopes": []}, "scopes"),
    ({**MAKE, "scopes": ["runs:read", "runs:delete"]}, "scopes.1"), ({**MAKE, "scopes": "runs:read"}, "scopes"),
    ({**MAKE, "days": 0}, "days"), ({**MAKE, "days": "ten"}, "days"), ({**MAKE, "days": 10**40}, "days"),
    ({**MAKE, "owner": "adam"}, "owner"), ({"name": "ci"}, "scopes")])
def test_a_bad_body_is_a_400_naming_the_field_and_makes_nothing(operator, body, field):
    body400 = problem(send(signed_in(operator), "POST", "me/tokens", body), 400)
    assert field in body400["errors"], body400
    assert not ApiToken.objects.exists() and not AuditEvent.objects.exists()


def test_days_past_the_policys_longest_are_a_422(operator):
    refused = problem(send(signed_in(operator), "POST", "me/tokens", {**MAKE, "days": 366}), 422)
    assert "from 1 to 365 days" in refused["detail"] and refused["code"] == "days_out_of_range"
    assert not ApiToken.objects.exists()


def test_a_token_makes_only_tokens_within_its_scopes_and_the_row_names_it(operator):
    client = with_token(operator, "runs:read")
    wider = problem(send(client, "POST", "me/tokens", MAKE), 403)
    assert wider["type"].endswith("/scope-missing") and "runs:write" in wider["detail"]
    made = send(client, "POST", "me/tokens", {**MAKE, "scopes": ["runs:read"]})
    assert made.status_code == 201
    parent = ApiToken.objects.get(name="test")
    assert events(codes.TOKEN_CREATED)[-1].token_id == parent.pk


def test_i_revoke_my_token_and_it_signs_in_no_more(operator):
    _, secret = token_create(user=operator, name="ci", scopes=["runs:read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    token = ApiToken.objects.get()
    answer = send(client, "DELETE", f"me/tokens/{token.pk}")
    assert answer.status_code == 200 and answer.json()["revoked_at"] is not None
    assert events(codes.TOKEN_REVOKED)[0].token_id == token.pk  # revoked through itself
    refused = problem(send(client, "GET", "me/tokens"), 401)
    assert "was revoked on" in refused["detail"]
    again = problem(send(signed_in(operator), "DELETE", f"me/tokens/{token.pk}"), 409)
    assert "revoked already" in again["detail"]


@pytest.mark.parametrize("token_id", ["999999", "99999999999999999999999"])
def test_revoking_a_token_that_is_not_mine_is_a_404(operator, approver, token_id):
    theirs, _ = token_create(user=approver, name="theirs", scopes=["runs:read"])
    client = signed_in(operator)
    problem(send(client, "DELETE", f"me/tokens/{theirs.pk}"), 404)
    problem(send(client, "DELETE", f"me/tokens/{token_id}"), 404)
    assert ApiToken.objects.get().revoked_at is None


def test_signed_out_nothing_is_listed_made_or_revoked(operator):
    token, _ = token_create(user=operator, name="ci", scopes=["runs:read"])
    client = APIClient()
    for method, path, body in (("GET", "me/tokens", None), ("POST", "me/tokens", MAKE),
                               ("DELETE", f"me/tokens/{token.pk}", None)):
        assert problem(send(client, method, path, body), 401)["type"].endswith("/unauthenticated")
    assert ApiToken.objects.get().revoked_at is None and ApiToken.objects.count() == 1


def test_an_admin_makes_a_service_account_and_its_token(admin_user):
    client = signed_in(admin_user)
    made = send(client, "POST", "service-accounts", {"username": "deploy-bot", "description": "deploys"})
    assert made.status_code == 201 and made.json()["username"] == "deploy-bot"
    bot = User.objects.get(username="deploy-bot")
    assert not bot.has_usable_password() and ServiceAccount.objects.get().created_by == admin_user
    answer = send(client, "POST", "service-accounts/deploy-bot/tokens", {**MAKE, "scopes": ["runs:write"]})
    assert answer.status_code == 201 and answer.json()["owner"] == "deploy-bot"
    bots = APIClient()
    bots.credentials(HTTP_AUTHORIZATION=f"Bearer {answer.json()['secret']}")
    assert send(bots, "GET", "me/tokens").json()["results"][0]["owner"] == "deploy-bot"
    refused = problem(send(bots, "POST", "me/tokens", {**MAKE, "scopes": ["runs:write"]}), 403)
    assert "made by Admins" in refused["detail"]


def test_service_account_refusals(admin_user, operator):
    service_account_create(user=admin_user, username="bot")
    admin = signed_in(admin_user)
    assert problem(send(admin, "POST", "service-accounts", {"username": "bot"}), 409)["code"] == "username_taken"
    assert "username" in problem(send(admin, "POST", "service-accounts", {"username": "b c"}), 422)["field"]
    problem(send(admin, "POST", "service-accounts", {"username": "x", "groups": ["Admins"]}), 400)
    problem(send(admin, "POST", "service-accounts/olive/tokens", MAKE), 404)  # a person, not a service account
    problem(send(admin, "POST", "service-accounts/nobody/tokens", MAKE), 404)
    person = signed_in(operator)
    problem(send(person, "POST", "service-accounts", {"username": "mine"}), 403)
    problem(send(person, "POST", "service-accounts/bot/tokens", MAKE), 403)
    assert problem(send(with_token(admin_user, "runs:read"), "POST", "service-accounts", {"username": "z"}),
                   403)["type"].endswith("/scope-missing")
    assert list(User.objects.filter(service_account__isnull=False).values_list("username", flat=True)) == ["bot"]
    assert not ApiToken.objects.filter(user__username="bot").exists()


def test_a_retried_token_request_makes_one_token_and_never_keeps_its_secret(operator, admin_user):
    from forge.api.models import IdempotencyKey

    service_account_create(user=admin_user, username="bot")
    secrets = []
    for client, path in ((signed_in(operator), "me/tokens"), (signed_in(admin_user), "service-accounts/bot/tokens")):
        first = client.post(f"/api/v1/{path}", MAKE, format="json", HTTP_IDEMPOTENCY_KEY="make-1")
        again = client.post(f"/api/v1/{path}", MAKE, format="json", HTTP_IDEMPOTENCY_KEY="make-1")
        assert first.status_code == again.status_code == 201
        assert first.json()["secret"].startswith("forge_pat_") and not first.has_header("Idempotent-Replayed")
        assert again["Idempotent-Replayed"] == "true" and again.json()["secret"] is None
        assert again.json()["id"] == first.json()["id"]  # the same token: its secret was shown once
        secrets.append(first.json()["secret"].encode())
    assert ApiToken.objects.count() == 2
    assert IdempotencyKey.objects.count() == 2
    assert not [row for row in IdempotencyKey.objects.all() for secret in secrets if secret in bytes(row.body)]
