"""An Admin lifts a login lockout through the audited service: from Django admin or the `forge` command."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from forge.accounts.models import LoginFailure
from forge.accounts.services import LockoutRejected, lockout_lift
from forge.audit.models import AuditEvent
from tests.forge.accounts.conftest import WRONG, log_in, logged_in_as
from tests.forge.test_forge_command import run_command

pytestmark = pytest.mark.django_db
ADMIN_LIST = "/admin/forge_accounts/loginfailure/"


@pytest.fixture
def olive_locked_out(client, operator, clock):
    """olive locked out from 10.0.0.1, and one failure for april from 10.0.0.2."""
    for _ in range(5):
        log_in(client, "olive", WRONG, address="10.0.0.1")
    log_in(client, "april", WRONG, address="10.0.0.2")
    assert log_in(client, "olive", "pw-olive", address="10.0.0.1").status_code == 429
    return operator


def lifts() -> list[tuple]:
    return list(AuditEvent.objects.filter(code="forge.login.lockout_lifted").values_list("actor", "target", "detail"))


def test_an_admin_lifts_a_lockout_and_the_person_logs_in_at_once(client, olive_locked_out, admin_user):
    assert lockout_lift(user=admin_user, username="olive", address="10.0.0.1") == 5
    assert lifts() == [("adam", "account:olive", {"account": "olive", "address": "10.0.0.1", "failures": 5})]
    assert log_in(client, "olive", "pw-olive", address="10.0.0.1").status_code == 302
    assert list(LoginFailure.objects.values_list("username", flat=True)) == ["april"]


def test_an_address_alone_lifts_every_accounts_failures_from_it(olive_locked_out, admin_user):
    assert lockout_lift(user=admin_user, address="10.0.0.2") == 1
    assert lifts() == [("adam", "address:10.0.0.2", {"account": None, "address": "10.0.0.2", "failures": 1})]
    assert list(LoginFailure.objects.values_list("username", flat=True).distinct()) == ["olive"]


def test_someone_who_is_not_an_admin_cannot_lift_one(client, olive_locked_out, approver):
    with pytest.raises(PermissionDenied):
        lockout_lift(user=olive_locked_out, username="olive", address="10.0.0.1")
    with pytest.raises(PermissionDenied):
        lockout_lift(user=approver, username="olive")
    assert LoginFailure.objects.count() == 2 and lifts() == []
    assert log_in(client, "olive", "pw-olive", address="10.0.0.1").status_code == 429


@pytest.mark.parametrize("kwargs, says", [
    ({}, "name an account, an address or both"),
    ({"address": "10.0.0.256"}, "is not an IP address"),
    ({"address": "\x00" * 100}, "is not an IP address"),
    ({"username": "nobody"}, "no failed logins are recorded for account 'nobody'"),
    ({"username": "olive", "address": "10.0.0.2"}, "for account 'olive' from address 10.0.0.2"),
    ({"username": "a\x00" * 200}, "no failed logins are recorded"),
])
def test_a_lift_that_matches_nothing_or_names_nothing_is_refused_and_changes_nothing(olive_locked_out, admin_user,
                                                                                     kwargs, says):
    with pytest.raises(LockoutRejected, match=says):
        lockout_lift(user=admin_user, **kwargs)
    assert LoginFailure.objects.count() == 2 and lifts() == []


def test_admins_see_failed_logins_in_django_admin_and_lift_them_there(client, olive_locked_out, admin_user):
    client.force_login(admin_user)
    page = client.get(ADMIN_LIST)
    assert page.status_code == 200
    text = page.content.decode()
    assert "olive" in text and "10.0.0.1" in text and "Lift the lockout" in text
    olive_row = LoginFailure.objects.get(username="olive")
    done = client.post(ADMIN_LIST, {"action": "lift", "_selected_action": [olive_row.pk]}, follow=True)
    assert "Forgot 5 failed logins" in done.content.decode()
    assert lifts() == [("adam", "account:olive", {"account": "olive", "address": "10.0.0.1", "failures": 5})]
    assert list(LoginFailure.objects.values_list("username", flat=True)) == ["april"]


def test_django_admin_offers_no_other_way_to_forget_failures(client, olive_locked_out, admin_user):
    client.force_login(User.objects.create_superuser("root", password="pw-root"))
    row = LoginFailure.objects.get(username="olive")
    assert client.post(f"{ADMIN_LIST}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    page = client.post(ADMIN_LIST, {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
                       follow=True)
    assert "No action selected" in page.content.decode()  # the action does not exist here
    assert client.get(f"{ADMIN_LIST}add/").status_code == 403
    for axes_page in ("/admin/axes/accessattempt/", "/admin/axes/accesslog/", "/admin/axes/accessfailurelog/"):
        assert client.get(axes_page).status_code == 404
    assert LoginFailure.objects.count() == 2 and lifts() == []


@pytest.mark.parametrize("who", ["operator", "staff"])
def test_people_who_are_not_admins_cannot_lift_in_django_admin(client, olive_locked_out, who):
    person = olive_locked_out if who == "operator" else User.objects.create_user("stu", is_staff=True)
    client.force_login(person)
    row = LoginFailure.objects.get(username="olive")
    page = client.post(ADMIN_LIST, {"action": "lift", "_selected_action": [row.pk]})
    assert page.status_code in (302, 403)
    assert LoginFailure.objects.count() == 2 and lifts() == []


def test_the_forge_command_lists_lockouts_and_lifts_one(client, olive_locked_out, clock):
    code, out, _ = run_command("lockouts", "--json")
    rows = json.loads(out)
    assert code == 0 and [(r["account"], r["address"], r["failures"], r["limits"]) for r in rows] == [
        ("april", "10.0.0.2", 1, []), ("olive", "10.0.0.1", 5, ["account"])]  # same time (the clock): by name
    assert rows[1]["locked_until"] == (clock.now + timedelta(minutes=15)).isoformat() and rows[0]["locked_until"] is None
    code, out, _ = run_command("lockouts")
    assert f"olive{' ' * 19} 10.0.0.1" in out and "locked until" in out and "(account)" in out
    code, out, _ = run_command("unlock", "--account", "olive", "--address", "10.0.0.1")
    assert code == 0 and "forgot 5 failed logins" in out
    assert lifts() == [("system", "account:olive", {"account": "olive", "address": "10.0.0.1", "failures": 5})]
    assert log_in(client, "olive", "pw-olive", address="10.0.0.1").status_code == 302
    assert logged_in_as(client) == str(olive_locked_out.pk)


def test_the_forge_command_refuses_a_person_who_is_not_an_admin_and_a_lift_of_nothing(olive_locked_out, approver):
    code, _, err = run_command("--user", "april", "unlock", "--account", "olive")
    assert code == 4 and "you may not lift login lockouts" in err  # refused (forge.errors.EXIT_REFUSED)
    code, _, err = run_command("--user", "april", "lockouts")
    assert code == 4 and "you may not see failed logins" in err
    code, _, err = run_command("unlock", "--address", "bogus")
    assert code == 2 and "'bogus' is not an IP address" in err
    assert LoginFailure.objects.count() == 2 and lifts() == []
