"""Tokens, service accounts and the token policy in Django admin: Admins look, revoke, make accounts and set the
longest life, each through the audited service; a bad value is an error on the form and changes nothing."""

from __future__ import annotations

import html

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import User

from forge.accounts.models import ApiToken, ServiceAccount, TokenPolicy
from forge.accounts.tokens import token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from tests.forge.admin_pages import staff

pytestmark = pytest.mark.django_db
TOKENS, ACCOUNTS, POLICY = ("/admin/forge_accounts/apitoken/", "/admin/forge_accounts/serviceaccount/",
                            "/admin/forge_accounts/tokenpolicy/")


@pytest.fixture
def adele(client):
    user = staff("adele", "Admins")
    client.force_login(user)
    return user


def test_an_admin_sees_tokens_without_their_secrets_and_revokes_them_through_the_service(client, adele, operator):
    token, secret = token_create(user=operator, name="ci", scopes=["runs:read"])
    listed = client.get(TOKENS).content.decode()
    assert token.prefix in listed and secret not in listed and token.digest not in listed
    page = client.get(f"{TOKENS}{token.pk}/change/").content.decode()
    assert token.prefix in page and secret not in page and token.digest not in page and 'name="_save"' not in page
    answer = client.post(TOKENS, {"action": "revoke", ACTION_CHECKBOX_NAME: [token.pk]}, follow=True)
    assert "Revoked 1 token(s)." in answer.content.decode()
    assert ApiToken.objects.get().revoked_at is not None
    assert AuditEvent.objects.get(code=codes.TOKEN_REVOKED).actor == "adele"
    again = client.post(TOKENS, {"action": "revoke", ACTION_CHECKBOX_NAME: [token.pk]}, follow=True)
    assert "Revoked 0 token(s); 1 were revoked already." in again.content.decode()
    assert AuditEvent.objects.filter(code=codes.TOKEN_REVOKED).count() == 1


def test_nobody_adds_changes_or_deletes_a_token_in_the_admin(client, adele, operator):
    token, _ = token_create(user=operator, name="ci", scopes=["runs:read"])
    assert client.get(f"{TOKENS}add/").status_code == 403
    assert client.post(f"{TOKENS}{token.pk}/delete/", {"post": "yes"}).status_code == 403
    client.post(f"{TOKENS}{token.pk}/change/", {"name": "renamed", "scopes": '["governance:admin"]'})
    assert ApiToken.objects.values_list("name", "scopes").get() == ("ci", ["runs:read"])


def test_an_admin_makes_a_service_account_in_the_admin(client, adele):
    answer = client.post(f"{ACCOUNTS}add/", {"username": "deploy-bot", "description": "deploys"})
    assert answer.status_code == 302
    bot = User.objects.get(username="deploy-bot")
    assert not bot.has_usable_password() and bot.service_account.created_by == adele
    assert AuditEvent.objects.get(code=codes.SERVICE_ACCOUNT_CREATED).target == "user:deploy-bot"


@pytest.mark.parametrize("form, says", [({"username": "adele"}, "The name adele is taken."),
                                        ({"username": "bad name"}, "letters, digits and @ . + - _ only"),
                                        ({"username": ""}, "This field is required."),
                                        ({"username": "bot", "description": "x" * 201}, "at most 200")])
def test_a_bad_service_account_is_an_error_on_the_form(client, adele, form, says):
    answer = client.post(f"{ACCOUNTS}add/", form)
    assert answer.status_code == 200 and says in html.unescape(answer.content.decode())
    assert not ServiceAccount.objects.exists() and not AuditEvent.objects.exists()


def test_an_admin_sets_the_token_policy_in_the_admin_audited(client, adele):
    assert client.post(f"{POLICY}add/", {"max_days": "30"}).status_code == 302
    policy = TokenPolicy.objects.get()
    assert client.post(f"{POLICY}{policy.pk}/change/", {"max_days": "3650"}).status_code == 302
    assert TokenPolicy.objects.get().max_days == 3650
    assert [e.detail for e in AuditEvent.objects.filter(code=codes.TOKEN_POLICY_CHANGED)] == [
        {"max_days": {"from": 365, "to": 30}}, {"max_days": {"from": 30, "to": 3650}}]
    assert client.get(f"{POLICY}add/").status_code == 403  # one row
    for bad in ("0", "3651", "ten", ""):
        answer = client.post(f"{POLICY}{policy.pk}/change/", {"max_days": bad})
        assert answer.status_code == 200 and 'class="errorlist' in answer.content.decode()
    assert TokenPolicy.objects.get().max_days == 3650 and AuditEvent.objects.count() == 2


def test_people_outside_admins_see_none_of_these_pages(client, operator):
    client.force_login(staff("stan"))  # staff, in no group
    for url in (TOKENS, ACCOUNTS, POLICY, f"{ACCOUNTS}add/"):
        assert client.get(url).status_code == 403
