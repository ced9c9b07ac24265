"""A socket that cannot join its group (Redis unreachable, its pool exhausted) still polls, and is not silent about
it: the first such socket is logged as a warning, every one is counted, and Admins read the count at /live/status/."""

import logging

import pytest
from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer
from django.test import override_settings
from redis.exceptions import MaxConnectionsError

from forge.console.socket_stats import counts
from tests.forge.console_pages.test_run_stream import connect, event_ids, login, received_ids, sync


class Exhausted(InMemoryChannelLayer):
    """A layer whose connections are all taken: what 500 sockets met with redis-py's default pool."""

    async def group_add(self, group, channel):
        raise MaxConnectionsError("Too many connections")


@pytest.fixture
def fresh_counts():
    kept = dict(counts)
    counts.clear()
    yield counts
    counts.clear()
    counts.update(kept)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@override_settings(CHANNEL_LAYERS={"default": {"BACKEND": f"{__name__}.Exhausted"}}, FORGE_LIVE_POLL_S=0.05)
@sync
async def test_sockets_that_cannot_join_are_logged_once_and_counted_and_still_get_their_events(
        run, approver, fresh_counts, caplog):
    ids = await sync_to_async(event_ids)(run)
    sockets = []
    with caplog.at_level(logging.WARNING, logger="forge.console.consumers"):
        for _ in range(3):
            socket, connected = await connect(run.pk, headers=await sync_to_async(login)(approver))
            assert connected and await received_ids(socket, ids[-1]) == ids
            sockets.append(socket)
    assert fresh_counts["polling_only"] == 3 and fresh_counts["open"] == 3
    warnings = [r for r in caplog.records if r.name == "forge.console.consumers" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "FORGE_LIVE_POLL_S" in warnings[0].getMessage()
    for socket in sockets:
        await socket.disconnect()
    assert fresh_counts["open"] == 0


@pytest.mark.django_db
def test_admins_read_the_counts(client, admin_user, fresh_counts):
    fresh_counts.update(open=4, opened=9, polling_only=2)
    client.force_login(admin_user)
    response = client.get("/live/status/")
    assert response.status_code == 200
    assert response.json() == {"sockets": {"open": 4, "opened": 9, "polling_only": 2, "closed_for_session": 0}}
    assert client.post("/live/status/").status_code == 405


@pytest.mark.django_db
def test_no_one_else_reads_them(client, operator, approver):
    for person in (operator, approver):
        client.force_login(person)
        assert client.get("/live/status/").status_code == 403
    client.logout()
    assert client.get("/live/status/").status_code == 302
