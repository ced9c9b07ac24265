"""Logins are throttled: an account from one address, and one address whatever the accounts, each get a
cooling-off period after repeated failures, on the console's and Django admin's login pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.test import AsyncClient
from django.utils import timezone

from forge.accounts.models import LoginFailure
from forge.audit.models import AuditEvent
from tests.forge.accounts.conftest import WRONG, log_in, logged_in_as

pytestmark = pytest.mark.django_db


def until_text(when, now) -> str:
    """The time a lockout ends as the page says it: with its day when that is not today's."""
    day = "" if when.date() == now.date() else f"{when:%Y-%m-%d} "
    return f"{day}{timezone.localtime(when):%H:%M} UTC"


def test_twenty_wrong_passwords_then_the_right_one_is_refused_until_the_cooling_off_ends(client, operator, clock):
    answers = [log_in(client, "olive", WRONG).status_code for _ in range(20)]
    assert answers == [200] * 4 + [429] * 16
    assert log_in(client, "olive", "pw-olive").status_code == 429
    assert logged_in_as(client) is None
    clock.advance(minutes=14, seconds=59)
    assert log_in(client, "olive", "pw-olive").status_code == 429
    clock.advance(seconds=1)
    page = log_in(client, "olive", "pw-olive")
    assert page.status_code == 302 and page["Location"] == "/"
    assert logged_in_as(client) == str(operator.pk)


def test_the_same_holds_on_the_admin_login_page(client, clock):
    root = User.objects.create_superuser("root", password="pw-root")
    answers = [log_in(client, "root", WRONG, path="/admin/login/").status_code for _ in range(20)]
    assert answers == [200] * 4 + [429] * 16
    assert log_in(client, "root", "pw-root", path="/admin/login/").status_code == 429
    clock.advance(minutes=15)
    assert log_in(client, "root", "pw-root", path="/admin/login/").status_code == 302
    assert logged_in_as(client) == str(root.pk) and client.get("/admin/").status_code == 200


# At noon the lockout ends the same day; at 23:50 it ends tomorrow, and the page says which day.
@pytest.mark.parametrize("locked_at", [datetime(2026, 11, 25, 12, 0, tzinfo=UTC),
                                       datetime(2026, 11, 25, 23, 50, tzinfo=UTC)], ids=["noon", "before-midnight"])
def test_the_login_page_says_the_account_is_locked_and_when_to_try_again(client, operator, clock, locked_at):
    clock.now = locked_at
    for _ in range(5):
        page = log_in(client, "olive", WRONG)
    assert page.status_code == 429 and page["Retry-After"] == "900"
    text = page.content.decode()
    assert "Log in to Forge" in text and 'value="olive"' in text
    assert (f"Too many failed log-ins for this user name from your address. Try again after "
            f"{until_text(locked_at + timedelta(minutes=15), locked_at)} (in 15 minutes)") in text
    clock.advance(minutes=10)
    page = log_in(client, "olive", "pw-olive")
    assert page["Retry-After"] == "300" and "(in 5 minutes)" in page.content.decode()


def test_a_lockout_from_one_address_does_not_lock_the_account_from_another(client, operator, clock):
    for _ in range(5):
        log_in(client, "olive", WRONG, address="10.0.0.1")
    assert log_in(client, "olive", "pw-olive", address="10.0.0.1").status_code == 429
    page = log_in(client, "olive", "pw-olive", address="10.0.0.2")
    assert page.status_code == 302 and logged_in_as(client) == str(operator.pk)


def test_many_failures_across_accounts_from_one_address_lock_the_address(client, operator, approver, clock):
    for n in range(49):
        assert log_in(client, f"guess-{n}", WRONG).status_code == 200
    # Below the limit an account still logs in from there, and that success forgets no other account's failures.
    assert log_in(client, "olive", "pw-olive").status_code == 302
    client.logout()
    page = log_in(client, "guess-49", WRONG)
    assert page.status_code == 429
    assert "Too many failed log-ins from your address. Try again after" in page.content.decode()
    assert log_in(client, "olive", "pw-olive").status_code == 429
    assert log_in(client, "april", "pw-april").status_code == 429
    assert logged_in_as(client) is None
    assert log_in(client, "april", "pw-april", address="10.0.0.2").status_code == 302


def test_a_successful_login_forgets_only_that_accounts_own_failures(client, operator, clock):
    for _ in range(4):
        log_in(client, "olive", WRONG)
    log_in(client, "nobody", WRONG)
    assert log_in(client, "olive", "pw-olive").status_code == 302
    assert list(LoginFailure.objects.values_list("username", "failures_since_start")) == [("nobody", 1)]


def test_the_forwarded_address_is_ignored_unless_behind_a_proxy(client, operator, clock):
    for n in range(5):
        log_in(client, "olive", WRONG, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    assert log_in(client, "olive", "pw-olive", HTTP_X_FORWARDED_FOR="198.51.100.77").status_code == 429
    assert set(LoginFailure.objects.values_list("ip_address", flat=True)) == {"10.0.0.1"}


def test_behind_a_proxy_the_address_the_proxy_added_counts(client, operator, clock, settings):
    settings.FORGE_BEHIND_PROXY = True
    for n in range(5):  # what the client put before the proxy's own entry changes nothing
        log_in(client, "olive", WRONG, address="127.0.0.1", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 203.0.113.7")
    assert log_in(client, "olive", "pw-olive", address="127.0.0.1",
                  HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 429
    assert log_in(client, "olive", "pw-olive", address="127.0.0.1",
                  HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 302


@pytest.mark.parametrize("forwarded", ["", "not-an-address", "203.0.113.7, ", "999.1.1.1"])
def test_behind_a_proxy_a_forwarded_value_that_is_no_address_counts_as_the_proxys(client, clock, settings, forwarded):
    settings.FORGE_BEHIND_PROXY = True
    assert log_in(client, "olive", WRONG, address="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded).status_code == 200
    assert list(LoginFailure.objects.values_list("ip_address", flat=True)) == ["127.0.0.1"]


def test_a_lockout_is_audited_once_and_no_password_is_kept_or_logged(client, operator, clock, caplog):
    for _ in range(12):
        log_in(client, "olive", WRONG, HTTP_USER_AGENT="probe")
    events = list(AuditEvent.objects.filter(code__startswith="forge.login."))
    assert [(e.code, e.actor, e.target) for e in events] == [("forge.login.locked_out", "system", "account:olive")]
    assert events[0].detail == {
        "limits": ["account"], "account": "olive", "address": "10.0.0.1", "account_failures": 5,
        "address_failures": 5, "until": (clock.now + timedelta(minutes=15)).isoformat(), "path": "/login/"}
    kept = [str(value) for row in LoginFailure.objects.values() for value in row.values()]
    assert kept and not any(WRONG in value for value in kept)
    assert LoginFailure.objects.get().post_data == "" and "csrfmiddlewaretoken" not in " ".join(kept)
    assert WRONG not in caplog.text and WRONG not in str(AuditEvent.objects.values_list("detail", flat=True))


def test_a_user_name_that_is_no_account_stays_out_of_the_audit_trail(client, clock):
    for _ in range(5):
        log_in(client, "hunter2-typed-as-a-name", WRONG)
    event = AuditEvent.objects.get(code="forge.login.locked_out")
    assert event.target == "address:10.0.0.1" and event.detail["account"] is None
    assert "hunter2" not in str(event.detail)


@pytest.mark.parametrize("username", ["x" * 5000, "\u00e9" * 300])
def test_an_overlong_user_name_given_to_authenticate_is_counted_under_one_the_database_takes(rf, clock, username):
    # The login forms refuse such a name before authenticate(); an endpoint that does not is throttled all the same.
    for _ in range(6):
        assert authenticate(rf.post("/api/v1/token", REMOTE_ADDR="10.0.0.1"), username=username, password=WRONG) is None
    assert list(LoginFailure.objects.values_list("username", "failures_since_start")) == [(username[:150], 5)]
    assert AuditEvent.objects.filter(code="forge.login.locked_out").count() == 1


def test_hostile_headers_are_counted_not_a_500(client, operator, clock):
    for _ in range(5):
        page = log_in(client, "olive", WRONG, HTTP_USER_AGENT="a\x00b" * 200, HTTP_ACCEPT="\x00" * 2000)
    assert page.status_code in (400, 429)


def test_the_lockout_page_comes_through_axes_async_middleware_too(operator, clock):
    client = AsyncClient()

    def post(password):
        return async_to_sync(client.post)("/login/", {"username": "olive", "password": password})

    assert [post(WRONG).status_code for _ in range(5)] == [200] * 4 + [429]
    page = post("pw-olive")
    assert page.status_code == 429 and "Too many failed log-ins for this user name" in page.content.decode()
