"""The My tokens page: a person lists, makes and revokes their own tokens; the secret is in the one answer that made
it; every bad input is said plainly and changes nothing."""

from __future__ import annotations

import html
import re

import pytest

from forge.accounts.models import ApiToken
from forge.accounts.tokens import token_create, token_policy_set
from forge.audit import codes
from forge.audit.models import AuditEvent

pytestmark = pytest.mark.django_db
PAGE = "/tokens/"


def text(answer) -> str:
    return html.unescape(answer.content.decode())


def made(client, headers=None, **form):
    return client.post(PAGE, {"op": "make", "name": "CI deploys", "scopes": ["runs:read", "runs:write"],
                              "days": "30", **form}, headers=headers)


def test_the_page_lists_my_tokens_and_none_of_anothers(client, operator, approver):
    mine, _ = token_create(user=operator, name="mine", scopes=["runs:read", "audit:read"])
    theirs, _ = token_create(user=approver, name="theirs", scopes=["runs:read"])
    client.force_login(operator)
    page = client.get(PAGE)
    assert page.status_code == 200 and page["Cache-Control"].count("no-store") == 1
    shown = text(page)
    assert f'data-token="{mine.pk}"' in shown and f"{mine.prefix}…" in shown and "audit:read" in shown
    assert "theirs" not in shown and theirs.prefix not in shown and "never" in shown
    assert 'aria-current="page">My tokens</a>' in shown  # the link beside the person's name


def test_making_a_token_shows_its_secret_once(client, operator):
    client.force_login(operator)
    answer = made(client)
    secret = re.search(r'id="token-secret" readonly value="(forge_pat_[\w-]{43})"', answer.content.decode())[1]
    assert answer.status_code == 201 and "the only time it is shown" in text(answer)
    token = ApiToken.objects.get()
    assert (token.name, token.scopes, token.prefix) == ("CI deploys", ["runs:read", "runs:write"], secret[:16])
    assert (token.expires_at - token.created_at).days == 30
    again = client.get(PAGE)
    assert secret not in again.content.decode() and token.prefix in again.content.decode()
    assert secret not in str(list(AuditEvent.objects.values()))


def test_through_htmx_only_the_pages_body_is_answered(client, operator):
    client.force_login(operator)
    answer = made(client, headers={"HX-Request": "true"})
    body = answer.content.decode()
    assert answer.status_code == 200 and body.lstrip().startswith('<div id="tokens-body"') and "<html" not in body
    assert "forge_pat_" in body
    refused = made(client, name="", headers={"HX-Request": "true"})  # htmx swaps only a 2xx: the words say it
    assert refused.status_code == 200 and "Nothing was made: give the token a name" in text(refused)


@pytest.mark.parametrize("form, says", [
    ({"name": ""}, "Nothing was made: give the token a name"),
    ({"name": "   "}, "Nothing was made: give the token a name"),
    ({"name": "x" * 101}, "the name has 101 characters; at most 100"),
    ({"name": "x" * 100_000}, "the name has 201 characters; at most 100"),
    ({"scopes": []}, "Nothing was made: choose at least one scope"),
    ({"scopes": ["runs:read", "runs:delete"]}, "no such scope: 'runs:delete'"),
    ({"scopes": ["x"] * 50}, "no such scope: 'x'"),
    ({"days": ""}, "say for how many days the token lives (1 to 365)"),
    ({"days": "0"}, "a token lives from 1 to 365 days"),
    ({"days": "366"}, "a token lives from 1 to 365 days"),
    ({"days": "-1"}, "the days must be a whole number from 1 to 365; '-1' is not one"),
    ({"days": "1.5"}, "the days must be a whole number"),
    ({"days": "ten"}, "the days must be a whole number"),
    ({"days": "٣"}, "the days must be a whole number"),  # a digit, but not one the form takes
    ({"days": "9" * 5000}, "the days must be a whole number"),
    ({"name": "a\x1b[2J"}, "holds a control character (U+001B)"),  # refused at the door (request_guard)
])
def test_every_bad_input_is_said_and_makes_nothing(client, operator, form, says):
    client.force_login(operator)
    answer = made(client, **form)
    assert answer.status_code == 400 and says in text(answer)
    assert 'id="token-secret"' not in text(answer)
    assert not ApiToken.objects.exists() and not AuditEvent.objects.exists()
    if form.get("name", "").strip() and len(form["name"]) <= 200 and form["name"].isprintable():
        assert f'value="{form["name"]}"' in text(answer)  # what was typed stays


def test_the_days_follow_the_admins_longest_life(client, operator, admin_user):
    token_policy_set(user=admin_user, max_days=10)
    client.force_login(operator)
    page = text(client.get(PAGE))
    assert 'max="10" value="10"' in page and "1 to 10" in page
    assert "a token lives from 1 to 10 days" in text(made(client, days="11"))
    assert made(client, days="10").status_code == 201 and ApiToken.objects.count() == 1


def test_a_name_with_markup_is_shown_as_text(client, operator):
    client.force_login(operator)
    answer = made(client, name="<script>alert(1)</script>")
    assert "<script>alert(1)</script>" not in answer.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in answer.content.decode()


def test_revoking_asks_first_then_revokes(client, operator):
    token, _ = token_create(user=operator, name="ci", scopes=["runs:read"])
    client.force_login(operator)
    asked = client.post(PAGE, {"op": "revoke", "token": token.pk})
    assert asked.status_code == 200 and f"Revoke ci ({token.prefix}…)?" in text(asked)
    assert ApiToken.objects.get().revoked_at is None and not AuditEvent.objects.filter(code=codes.TOKEN_REVOKED)
    done = client.post(PAGE, {"op": "revoke", "token": token.pk, "confirm": "yes"}, follow=True)
    assert done.redirect_chain == [(PAGE, 302)]
    assert "Revoked ci" in text(done) and "revoked 20" in text(done)
    assert ApiToken.objects.get().revoked_at is not None
    assert AuditEvent.objects.get(code=codes.TOKEN_REVOKED).actor == "olive"
    again = client.post(PAGE, {"op": "revoke", "token": token.pk, "confirm": "yes"})
    assert again.status_code == 409 and "Nothing was revoked: the token" in text(again)
    assert "was revoked already" in text(again)
    assert AuditEvent.objects.filter(code=codes.TOKEN_REVOKED).count() == 1


@pytest.mark.parametrize("given", ["", "abc", "-1", "99999999999999999999999", "1.0", "٣"])
def test_revoking_an_id_that_is_none_is_said(client, operator, given):
    token_create(user=operator, name="ci", scopes=["runs:read"])
    client.force_login(operator)
    answer = client.post(PAGE, {"op": "revoke", "token": given, "confirm": "yes"})
    assert answer.status_code == 404 and "Nothing was revoked: you have no such token." in text(answer)
    assert ApiToken.objects.get().revoked_at is None


def test_nobody_revokes_anothers_token_here(client, operator, approver):
    theirs, _ = token_create(user=approver, name="theirs", scopes=["runs:read"])
    client.force_login(operator)
    answer = client.post(PAGE, {"op": "revoke", "token": theirs.pk, "confirm": "yes"})
    assert answer.status_code == 404 and ApiToken.objects.get().revoked_at is None


def test_a_form_without_an_operation_changes_nothing(client, operator):
    client.force_login(operator)
    for op in ("", "delete", "x" * 10_000):
        answer = client.post(PAGE, {"op": op, "name": "ci", "scopes": ["runs:read"], "days": "3"})
        assert answer.status_code == 400 and "did not say whether to make or revoke" in text(answer)
    assert not ApiToken.objects.exists()


def test_someone_in_no_group_cannot_open_the_page(client, outsider):
    client.force_login(outsider)
    assert client.get(PAGE).status_code == 403
    assert made(client).status_code == 403 and not ApiToken.objects.exists()


def test_a_post_without_its_csrf_token_changes_nothing(operator):
    from django.test import Client
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    assert made(strict).status_code == 403 and not ApiToken.objects.exists()
