"""A live socket follows the session it was opened with: a logout, a password change, leaving every group or
being deactivated closes the person's sockets (4403) within 5 s, both when the change is pushed to daphne (a
signal, through the channel layer) and when only the sockets' own periodic check can see it (a change made by
another process on the embedded default, whose in-memory layer reaches no other process)."""

import time

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from forge.accounts import session_watch
from forge.live import session_digest
from tests.forge.conftest import member
from tests.forge.console_pages.test_run_stream import ORIGIN, socket_to, sync

DEADLINE_S = 5
PUSHED = {"FORGE_LIVE_SESSION_CHECK_S": 60}  # only the push can close a socket within the deadline
CHECKED = {"FORGE_LIVE_SESSION_CHECK_S": 0.2}  # the period, short in tests


def signed_in(user) -> tuple[Client, list]:
    """A browser's session: its client (to log out with) and the socket headers that carry its cookie."""
    client = Client()
    client.force_login(user)
    return client, [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())] + ORIGIN


async def watching(headers, run_id: int) -> list:
    """A run's socket and a list page's socket of one session, both past their first messages."""
    sockets = []
    for path, first in ((f"/ws/runs/{run_id}/", '"type": "events"'), ("/ws/live/?topics=runs", "live-refresh")):
        socket = socket_to(path, headers=headers)
        connected, _ = await socket.connect(timeout=30)
        assert connected
        assert first in await socket.receive_from(timeout=30)  # the replay; the page's first fragment
        sockets.append(socket)
    return sockets


async def closed_within(socket, seconds: float):
    """The close code the socket got within `seconds` (None when still open then); other messages are skipped."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await socket.receive_output(timeout=left)
        except TimeoutError:
            return None
        if message["type"] == "websocket.close":
            return message.get("code")
    return None


async def still_open(socket) -> bool:
    await socket.send_json_to({"type": "ping"})
    while True:
        message = await socket.receive_output(timeout=30)
        if message["type"] == "websocket.close":
            return False
        if message.get("text") == '{"type": "pong"}':
            return True


def log_out(client, user):
    client.post("/logout/")


def change_password(client, user):
    user.set_password("a-new-password-9317")
    user.save()


def leave_every_group(client, user):
    user.groups.clear()


def leave_through_the_group(client, user):
    Group.objects.get(name="Approvers").user_set.remove(user)


def empty_the_group(client, user):
    Group.objects.get(name="Approvers").user_set.clear()


def deactivate(client, user):
    user.is_active = False
    user.save()


PUSHES = [log_out, change_password, leave_every_group, leave_through_the_group, empty_the_group, deactivate]


# The same changes, made by another process: no signal reaches this one.
def session_deleted(client, user):
    Session.objects.filter(session_key=client.cookies["sessionid"].value).delete()


def password_written(client, user):
    User.objects.filter(pk=user.pk).update(password=make_password("a-new-password-9317"))


def memberships_deleted(client, user):
    User.groups.through.objects.filter(user_id=user.pk).delete()


def deactivated_in_bulk(client, user):
    User.objects.filter(pk=user.pk).update(is_active=False)


UNSEEN = [session_deleted, password_written, memberships_deleted, deactivated_in_bulk]


async def closes_only_the_person_s_sockets(run, approver, operator, change):
    """`change` to the approver closes each of their sockets with 4403 in time; the operator's stay open."""
    client, headers = await sync_to_async(signed_in)(approver)
    sockets = await watching(headers, run.pk)
    _, others = await sync_to_async(signed_in)(operator)
    bystanders = await watching(others, run.pk)
    await sync_to_async(change)(client, approver)
    for socket in sockets:
        assert await closed_within(socket, DEADLINE_S) == 4403
    for socket in bystanders:
        assert await still_open(socket)
        await socket.disconnect()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("change", PUSHES, ids=lambda f: f.__name__)
@override_settings(**PUSHED)
@sync
async def test_a_change_pushed_by_a_signal_closes_the_person_s_sockets_at_once(run, approver, operator, change):
    await closes_only_the_person_s_sockets(run, approver, operator, change)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("change", UNSEEN, ids=lambda f: f.__name__)
@override_settings(**CHECKED)
@sync
async def test_a_change_no_signal_reports_is_found_by_the_period_check(run, approver, operator, change):
    await closes_only_the_person_s_sockets(run, approver, operator, change)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@override_settings(**PUSHED)
@sync
async def test_a_logout_closes_the_sockets_of_that_session_not_those_of_the_person_s_other_browser(run, approver):
    laptop, headers = await sync_to_async(signed_in)(approver)
    on_the_laptop = await watching(headers, run.pk)
    _, elsewhere = await sync_to_async(signed_in)(approver)
    on_the_phone = await watching(elsewhere, run.pk)
    await sync_to_async(laptop.post)("/logout/")
    for socket in on_the_laptop:
        assert await closed_within(socket, DEADLINE_S) == 4403
    for socket in on_the_phone:  # still logged in there, as Django keeps that session
        assert await still_open(socket)
        await socket.disconnect()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@override_settings(**CHECKED)
@sync
async def test_a_superuser_in_no_group_keeps_watching(run):
    root = await sync_to_async(User.objects.create_superuser)("root", password="pw-root")
    _, headers = await sync_to_async(signed_in)(root)
    sockets = await watching(headers, run.pk)
    for socket in sockets:
        assert await socket.receive_nothing(timeout=1)  # five periods went by without a close
    for socket in sockets:
        assert await still_open(socket)
        await socket.disconnect()


def tickets(people: list, sessions_each: int = 1) -> set:
    found = set()
    for person in people:
        for _ in range(sessions_each):
            client, _ = signed_in(person)
            session = Session.objects.get(session_key=client.cookies["sessionid"].value).get_decoded()
            found.add(session_watch.Ticket(person.pk, client.cookies["sessionid"].value, session["_auth_user_hash"]))
    return found


@pytest.mark.django_db
def test_checking_every_socket_of_a_process_costs_two_queries_however_many_there_are():
    people = [member(f"viewer{i}", "Approvers") for i in range(25)]
    few, many = tickets(people[:1]), tickets(people, sessions_each=4)
    for checked in (few, many):
        with CaptureQueriesContext(connection) as queries:
            assert session_watch.revoked(checked) == set()
        assert len(queries) == 2
    User.objects.filter(pk=people[3].pk).update(is_active=False)
    assert {t.user_id for t in session_watch.revoked(many)} == {people[3].pk}


@pytest.mark.django_db
def test_an_expired_session_fails_its_check(approver):
    [ticket] = tickets([approver])
    Session.objects.filter(session_key=ticket.session_key).update(expire_date="2000-01-01T00:00:00Z")
    assert session_watch.revoked({ticket}) == {ticket}


def test_a_logout_names_its_session_by_a_digest_not_by_its_key():
    ticket = session_watch.Ticket(1, "k" * 32, "hash")
    assert ticket.digest == session_digest("k" * 32) and "k" * 32 not in ticket.digest
    assert "k" * 32 not in repr(ticket) and "hash" not in repr(ticket)
