"""API tokens and service accounts through their services (forge/accounts/tokens.py), and what a token may do: its
scopes and its owner's groups of the moment, nothing more."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import RequestFactory
from django.utils import timezone

from forge.accounts import roles
from forge.accounts.models import ApiToken, ServiceAccount, TokenPolicy
from forge.accounts.tokens import (
    service_account_create, token_create, token_for_secret, token_policy_set, token_revoke, tokens_of)
from forge.api.auth import BearerTokenAuthentication
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.errors import Conflict, Forbidden, Invalid, ScopeMissing

pytestmark = pytest.mark.django_db


def through(token: ApiToken) -> User:
    """The token's owner as a request signed in with it sees them: a fresh object carrying the token."""
    request = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {token._secret}")
    user, _ = BearerTokenAuthentication().authenticate(request)
    return user


def make(user, *scopes, **more) -> ApiToken:
    token, secret = token_create(user=user, name=more.pop("name", "ci"), scopes=list(scopes), **more)
    token._secret = secret
    return token


def test_a_token_is_prefixed_random_stored_as_its_digest_and_lives_90_days_by_default(operator):
    token, secret = token_create(user=operator, name="  CI deploys ", scopes=["runs:write", "runs:read"])
    assert secret.startswith("forge_pat_") and len(secret) == 53
    row = ApiToken.objects.get()
    assert row.digest == hashlib.sha256(secret.encode()).hexdigest() and row.prefix == secret[:16]
    assert secret not in json.dumps(list(ApiToken.objects.values()), default=str)
    assert row.name == "CI deploys" and row.scopes == ["runs:read", "runs:write"]  # in SCOPES' order
    assert row.user == operator and row.created_by == operator and row.revoked_at is None
    assert row.expires_at - row.created_at == timedelta(days=90)
    assert token_create(user=operator, name="ci", scopes=["runs:read"])[1] != secret


def test_a_token_lives_at_most_the_policys_longest_and_the_default_is_cut_to_it(operator, admin_user):
    token_policy_set(user=admin_user, max_days=30)
    assert make(operator, "runs:read").expires_at - timezone.now() <= timedelta(days=30)
    assert make(operator, "runs:read", days=30).pk
    assert make(operator, "runs:read", days=1).pk
    with pytest.raises(Invalid, match="from 1 to 30 days"):
        make(operator, "runs:read", days=31)


@pytest.mark.parametrize("days", [0, -1, 366, 10**30, "30", 1.5, True])
def test_days_outside_one_to_the_longest_are_refused_and_nothing_is_made(operator, days):
    with pytest.raises(Invalid):
        make(operator, "runs:read", days=days)
    assert not ApiToken.objects.exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize("name, says", [("", "give the token a name"), ("   ", "give the token a name"),
                                        ("x" * 101, "101 characters; at most 100"), (None, "give the token a name"),
                                        ("a\x00b", "control characters"), ("a\x1b[2Jb", "control characters"),
                                        ("a\ud800", "control characters")])
def test_a_missing_or_long_name_is_refused(operator, name, says):
    with pytest.raises(Invalid, match=says):
        token_create(user=operator, name=name, scopes=["runs:read"])
    assert not ApiToken.objects.exists()


def test_a_name_of_100_characters_or_with_markup_is_kept_as_given(operator):
    assert make(operator, "runs:read", name="x" * 100).name == "x" * 100
    assert make(operator, "runs:read", name="<script>alert(1)</script>").name == "<script>alert(1)</script>"


@pytest.mark.parametrize("scopes, says", [
    ([], "choose at least one scope"), (None, "choose at least one scope"), ("runs:read", "choose at least one"),
    (["runs:read", "runs:delete"], "no such scope: 'runs:delete'"), (["RUNS:READ"], "no such scope"),
    ([{"a": 1}], "no such scope")])
def test_scopes_must_be_a_non_empty_list_of_known_ones(operator, scopes, says):
    with pytest.raises(Invalid, match=says):
        token_create(user=operator, name="ci", scopes=scopes)
    assert not ApiToken.objects.exists()


def test_a_person_makes_only_their_own_tokens(operator, approver, admin_user, outsider):
    with pytest.raises(Forbidden, match="a person makes their own tokens"):
        make(operator, "runs:read", owner=approver)
    with pytest.raises(Forbidden, match="a person makes their own tokens"):
        make(admin_user, "runs:read", owner=approver)  # an Admin too: a person's tokens are theirs
    assert make(operator, "runs:read", owner=operator).user == operator
    assert make(outsider, "runs:read").user == outsider  # useless until a group is given, but theirs


def test_an_admin_makes_a_service_accounts_tokens_and_nobody_else_does(operator, admin_user):
    bot = service_account_create(user=admin_user, username="deploy-bot", description="deploys from CI")
    token = make(admin_user, "runs:write", owner=bot)
    assert token.user == bot and token.created_by == admin_user
    with pytest.raises(Forbidden, match="only Admins make tokens for service accounts"):
        make(operator, "runs:read", owner=bot)
    with pytest.raises(Forbidden, match="a service account's tokens are made by Admins"):
        make(through(token), "runs:write")


def test_a_token_cannot_make_a_token_with_scopes_it_lacks(operator):
    narrow = make(operator, "runs:read")
    with pytest.raises(ScopeMissing, match="runs:write"):
        make(through(narrow), "runs:read", "runs:write")
    made = make(through(narrow), "runs:read", name="child")
    assert made.scopes == ["runs:read"]
    assert AuditEvent.objects.get(target=f"token:{made.pk}").token_id == narrow.pk


def test_making_and_revoking_are_audited_with_the_token_they_came_through(operator):
    token = make(operator, "runs:read", days=7)
    created = AuditEvent.objects.get(code=codes.TOKEN_CREATED)
    assert (created.actor, created.target, created.token_id) == ("olive", f"token:{token.pk}", None)
    assert created.detail["scopes"] == ["runs:read"] and created.detail["days"] == 7
    assert created.detail["prefix"] == token.prefix and created.detail["owner"] == "olive"
    other = make(operator, "runs:read", name="other")
    token_revoke(user=through(token), token=other)
    revoked = AuditEvent.objects.get(code=codes.TOKEN_REVOKED)
    assert (revoked.target, revoked.token_id) == (f"token:{other.pk}", token.pk)


def test_the_secret_is_in_no_audit_row_and_no_log(operator, admin_user, caplog):
    with caplog.at_level(logging.DEBUG):
        token = make(operator, "runs:read", "runs:write")
        user = through(token)
        make(user, "runs:read", name="second")
        token_revoke(user=user, token=token)
        bot = service_account_create(user=admin_user, username="bot")
        bots = make(admin_user, "runs:read", owner=bot)
    rows = json.dumps(list(AuditEvent.objects.values()), default=str)
    for secret in (token._secret, bots._secret):
        assert secret not in rows and secret not in caplog.text
        assert secret[16:] not in rows  # not even the part past the shown prefix


def test_the_owner_or_an_admin_revokes_a_token_once(operator, approver, admin_user):
    token = make(operator, "runs:read")
    with pytest.raises(Forbidden, match="only the token's owner or an Admin"):
        token_revoke(user=approver, token=token)
    assert ApiToken.objects.get().revoked_at is None
    token_revoke(user=admin_user, token=token)
    assert ApiToken.objects.get().revoked_at is not None
    with pytest.raises(Conflict, match="revoked already"):
        token_revoke(user=operator, token=token)
    assert AuditEvent.objects.filter(code=codes.TOKEN_REVOKED).count() == 1


def test_an_admin_token_without_governance_admin_cannot_revoke_anothers_token(operator, admin_user):
    token = make(operator, "runs:read")
    with pytest.raises(ScopeMissing):
        token_revoke(user=through(make(admin_user, "runs:read", name="admins")), token=token)
    token_revoke(user=through(make(admin_user, "governance:admin", name="gov")), token=token)


def test_an_admin_makes_a_service_account_without_a_password(admin_user):
    bot = service_account_create(user=admin_user, username="deploy-bot", description=" from CI ")
    assert not bot.has_usable_password() and bot.is_active
    assert ServiceAccount.objects.get().description == "from CI" and bot.service_account.created_by == admin_user
    event = AuditEvent.objects.get(code=codes.SERVICE_ACCOUNT_CREATED)
    assert (event.actor, event.target, event.detail) == ("adam", "user:deploy-bot",
                                                          {"username": "deploy-bot", "description": "from CI"})


@pytest.mark.parametrize("username, says", [("", "1 to 150 characters"), ("x" * 151, "1 to 150 characters"),
                                            ("bad name", "letters, digits"), ("a/b", "letters, digits"),
                                            ("adam", "is taken"), ("ADAM", "is taken")])
def test_a_service_accounts_name_must_be_a_free_user_name(admin_user, username, says):
    with pytest.raises((Invalid, Conflict), match=says):
        service_account_create(user=admin_user, username=username)
    assert not ServiceAccount.objects.exists() and not AuditEvent.objects.exists()


def test_only_admins_make_service_accounts_or_set_the_policy(operator, approver):
    for person in (operator, approver):
        with pytest.raises(Forbidden, match="only Admins"):
            service_account_create(user=person, username="bot")
        with pytest.raises(Forbidden, match="only Admins"):
            token_policy_set(user=person, max_days=10)
    assert not User.objects.filter(username="bot").exists() and not TokenPolicy.objects.exists()


def test_a_service_accounts_description_has_at_most_200_characters_and_no_control_ones(admin_user):
    with pytest.raises(Invalid, match="201 characters; at most 200"):
        service_account_create(user=admin_user, username="bot", description="x" * 201)
    with pytest.raises(Invalid, match="control characters"):
        service_account_create(user=admin_user, username="bot", description="a\x00b")
    assert service_account_create(user=admin_user, username="bot", description="x" * 200).service_account


@pytest.mark.parametrize("max_days", [0, 3651, -5, "10", True, 2.0])
def test_the_policy_takes_whole_days_from_1_to_3650(admin_user, max_days):
    with pytest.raises(Invalid, match="from 1 to 3650"):
        token_policy_set(user=admin_user, max_days=max_days)
    assert not TokenPolicy.objects.exists() and not AuditEvent.objects.exists()


def test_setting_the_policy_is_audited_with_before_and_after(admin_user):
    token_policy_set(user=admin_user, max_days=3650)
    token_policy_set(user=admin_user, max_days=1)
    assert TokenPolicy.objects.get().max_days == 1
    assert [e.detail for e in AuditEvent.objects.filter(code=codes.TOKEN_POLICY_CHANGED)] == [
        {"max_days": {"from": 365, "to": 3650}}, {"max_days": {"from": 3650, "to": 1}}]


def test_a_token_is_found_by_its_secret_only(operator, approver):
    token = make(operator, "runs:read")
    assert token_for_secret(token._secret) == token
    assert token_for_secret(token._secret[:-1] + ("A" if token._secret[-1] != "A" else "B")) is None
    assert token_for_secret(token.prefix) is None and token_for_secret("") is None
    assert token_for_secret("forge_pat_" + "x" * 5000) is None
    make(approver, "runs:read")
    assert list(tokens_of(operator)) == [token]


# -- what a token may do ---------------------------------------------------------------------------------------


# What one scope lets an Admin's token do (docs/design/api.md, section 4): a write scope includes the reads it needs
# to act, as a GitHub fine-grained token's "read and write" includes read. Written out, not read from roles.
READS = {"run.view", "workflow.view", "approval.view", "killswitch.view"}
ACTS = {
    "runs:read": READS,
    "runs:write": READS | {"run.start", "run.cancel", "run.restart", "schedule.manage"},
    "approvals:decide": {"approval.view"},
    "workflows:write": {"workflow.view", "workflow.edit"},
    "governance:admin": {"governance.edit", "killswitch.set", "killswitch.view"},
    "audit:read": {"audit.view"},
}


@pytest.mark.parametrize("scope", roles.SCOPES)
def test_an_admins_token_may_take_exactly_the_actions_its_scope_includes(admin_user, scope):
    user = through(make(admin_user, scope))
    assert {a for a in roles.ACTIONS if roles.can(user, a)} == ACTS[scope]
    assert roles.may_approve(user, []) is (scope == "approvals:decide")
    assert roles.may_reply_as_member(user, []) is (scope == "approvals:decide")


@pytest.mark.parametrize("person, allowed", [
    ("operator", {"run.view", "workflow.view", "approval.view", "killswitch.view", "run.start", "run.cancel",
                  "run.restart", "workflow.edit", "schedule.manage", "audit.view"}),
    ("approver", {"run.view", "workflow.view", "approval.view", "killswitch.view", "audit.view"}),
    ("outsider", set())])
def test_a_token_with_every_scope_may_do_no_more_than_its_owners_groups(request, person, allowed):
    owner = request.getfixturevalue(person)
    user = through(make(owner, *roles.SCOPES))
    assert {a for a in roles.ACTIONS if roles.can(user, a)} == allowed
    assert {a for a in roles.ACTIONS if roles.can(owner, a)} == allowed  # a session: the groups alone
    assert roles.may_approve(user, []) is (person == "approver")


def test_every_action_needs_a_scope_some_token_can_hold_and_reads_are_for_every_group():
    assert set(roles.ACTION_SCOPES) == set(roles.ACTIONS)
    assert all(roles.scopes_giving(scope) for scope in roles.ACTION_SCOPES.values())
    assert set(roles.ACTION_SCOPES.values()) & set(roles.SCOPES) | {roles.DECIDING_SCOPE} == set(roles.SCOPES)
    for read in ("audit.view", "workflow.view", "approval.view", "killswitch.view"):
        assert set(roles.ACTIONS[read]) == set(roles.ACTIONS["run.view"]), read


def test_require_says_whether_the_scope_or_the_groups_refuse(operator):
    with pytest.raises(ScopeMissing, match="lacks the scope runs:write,") as refused:
        roles.require(through(make(operator, "runs:read")), "run.start", "no")
    assert refused.value.extra == {"scope": "runs:write", "scopes": ["runs:write"]}
    with pytest.raises(Forbidden, match="only Admins") as refused:
        roles.require(through(make(operator, *roles.SCOPES, name="all")), "governance.edit", "only Admins")
    assert not isinstance(refused.value, ScopeMissing)
    roles.require(through(make(operator, "runs:write", name="w")), "run.start", "no")


def test_a_refused_read_names_every_scope_that_would_give_it(operator):
    with pytest.raises(ScopeMissing, match="lacks the scope runs:read, runs:write or approvals:decide,") as refused:
        roles.require(through(make(operator, "audit:read")), "approval.view", "no")
    assert refused.value.extra == {"scope": "runs:read", "scopes": ["runs:read", "runs:write", "approvals:decide"]}
    with pytest.raises(ScopeMissing, match="lacks the scope runs:read or runs:write,"):
        roles.require(through(make(operator, "approvals:decide", name="d")), "run.view", "no")


def test_a_write_scope_makes_tokens_of_the_reads_it_includes_and_no_more(operator):
    writer = through(make(operator, "runs:write"))
    assert make(writer, "runs:read", name="reader").scopes == ["runs:read"]
    with pytest.raises(ScopeMissing, match="approvals:decide"):
        make(through(make(operator, "runs:read", name="r")), "approvals:decide", name="wider")


def test_taking_a_person_out_of_approvers_takes_the_power_from_their_token_at_once(approver):
    token = make(approver, "approvals:decide", "runs:read")
    assert roles.may_approve(through(token), []) and roles.can(through(token), "run.view")
    approver.groups.remove(Group.objects.get(name="Approvers"))
    assert not roles.may_approve(through(token), []) and not roles.can(through(token), "run.view")
    approver.groups.add(Group.objects.get(name="Operators"))
    assert roles.can(through(token), "run.view") and not roles.may_approve(through(token), [])
