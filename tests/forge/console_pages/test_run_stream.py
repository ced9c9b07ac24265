"""The live stream of a run over a real websocket (Channels' communicator against forge.asgi): replay from the
id the page shows, then what comes after, never an id twice or skipped, and only to those who may see it."""

import functools
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from forge.asgi import application
from forge.runs import services
from forge.runs.models import Approval, RunEvent
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def sync(scenario):
    """Run an async test body on an event loop of its own (no async test plugin is needed)."""
    @functools.wraps(scenario)
    def test(*args, **kwargs):
        return async_to_sync(scenario)(*args, **kwargs)
    return test
SERVER = ["127.0.0.1", 8000]  # where daphne listens, as it puts it in a socket's scope
ORIGIN = [(b"origin", b"http://127.0.0.1:8000")]


def socket_to(path: str, headers=ORIGIN) -> WebsocketCommunicator:
    """A socket to forge.asgi as daphne hands it one: from 127.0.0.1:8000, through its origin check."""
    socket = WebsocketCommunicator(application, path, headers=headers)
    socket.scope["server"] = SERVER
    return socket


@pytest.fixture
def run(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))


def event_ids(run) -> list[int]:
    """The events a page is sent: all but what the interpreter was fed (forge/runs/reads/stream.py)."""
    return list(RunEvent.objects.filter(run=run).exclude(kind="input").order_by("id").values_list("id", flat=True))


async def connect(run_id, after=0, headers=ORIGIN):
    communicator = socket_to(f"/ws/runs/{run_id}/?after={after}", headers=headers)
    connected, _ = await communicator.connect(timeout=30)
    return communicator, connected


async def received_ids(communicator, until_id: int) -> list[int]:
    ids = []
    while not ids or ids[-1] < until_id:
        message = await communicator.receive_json_from(timeout=30)
        assert message["type"] == "events", message
        ids += [event["id"] for event in message["events"]]
    return ids


def login(user):
    """A session the way the browser has one: its cookie, which the consumer reads."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())] + ORIGIN


@sync
async def test_it_replays_every_event_of_the_run_in_order_then_streams_the_next(run, approver):
    ids = await sync_to_async(event_ids)(run)
    communicator, connected = await connect(run.pk, headers=await sync_to_async(login)(approver))
    assert connected
    assert await received_ids(communicator, ids[-1]) == ids
    approval = await sync_to_async(Approval.objects.get)(run=run)
    await sync_to_async(services.approval_decide)(user=approver, approval=approval, decision="approve")
    await sync_to_async(fast_forward)(run)
    later = [i for i in await sync_to_async(event_ids)(run) if i > ids[-1]]
    assert later and await received_ids(communicator, later[-1]) == later
    await communicator.disconnect()


@sync
async def test_a_reconnect_from_the_last_id_applied_gets_only_what_came_after(run, approver):
    ids = await sync_to_async(event_ids)(run)
    middle = ids[len(ids) // 2]
    communicator, _ = await connect(run.pk, after=middle, headers=await sync_to_async(login)(approver))
    assert await received_ids(communicator, ids[-1]) == [i for i in ids if i > middle]
    await communicator.disconnect()


@sync
async def test_another_run_s_events_never_arrive(run, approver, save_workflow, operator):
    other = await sync_to_async(lambda: fast_forward(services.run_start(
        user=operator, version=save_workflow(APPROVAL))))()
    ids = await sync_to_async(event_ids)(run)
    communicator, _ = await connect(run.pk, headers=await sync_to_async(login)(approver))
    received = await received_ids(communicator, ids[-1])
    assert set(received).isdisjoint(await sync_to_async(event_ids)(other))
    await communicator.disconnect()


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
@sync
async def test_someone_who_may_not_see_runs_is_refused(run, who):
    headers = ORIGIN
    if who == "outsider":
        headers = await sync_to_async(login)(await sync_to_async(member)("oscar"))
    communicator, connected = await connect(run.pk, headers=headers)
    closed = await communicator.receive_output(timeout=30)
    assert closed == {"type": "websocket.close", "code": 4403}


@sync
async def test_an_unknown_run_is_refused_as_missing(approver):
    communicator, _ = await connect(999999, headers=await sync_to_async(login)(approver))
    assert await communicator.receive_output(timeout=30) == {"type": "websocket.close", "code": 4404}


@sync
async def test_a_socket_from_another_origin_is_refused(run, approver):
    headers = [h for h in await sync_to_async(login)(approver) if h[0] != b"origin"] + [(b"origin", b"http://evil.example")]
    communicator, connected = await connect(run.pk, headers=headers)
    assert not connected


@sync
async def test_bad_messages_get_an_error_and_the_socket_stays_usable(run, approver):
    ids = await sync_to_async(event_ids)(run)
    communicator, _ = await connect(run.pk, headers=await sync_to_async(login)(approver))
    await received_ids(communicator, ids[-1])
    for bad in ("not json", '{"type": "drop tables"}', "[1, 2]", "[" * 100_000):
        await communicator.send_to(text_data=bad)
        assert (await communicator.receive_json_from(timeout=30))["type"] == "error"
    await communicator.send_to(bytes_data=b"\x00\x01")
    assert (await communicator.receive_json_from(timeout=30))["type"] == "error"
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=30) == {"type": "pong"}
    await communicator.disconnect()


@sync
async def test_too_far_behind_it_gets_a_snapshot_of_the_rows(run, approver):
    ids = await sync_to_async(event_ids)(run)
    with override_settings(FORGE_LIVE_REPLAY_MAX=2):
        communicator, _ = await connect(run.pk, headers=await sync_to_async(login)(approver))
        snapshot = await communicator.receive_json_from(timeout=30)
    assert snapshot["type"] == "snapshot" and snapshot["last_id"] == ids[-1]
    assert snapshot["steps"]["prepare"]["status"] == "completed"
    assert snapshot["steps"]["sign_off"]["status"] == "waiting"
    assert snapshot["run"]["status"] == run.status
    await communicator.disconnect()


def test_a_round_s_commit_wakes_the_run_s_page_and_the_inbox(save_workflow, operator, approver, monkeypatch):
    sent = []

    class Layer:
        async def group_send(self, group, message):
            sent.append((group, message["type"]))

    monkeypatch.setattr("forge.live.get_channel_layer", Layer)
    with override_settings(REDIS_URL="redis://127.0.0.1:6379/0"):
        run = services.run_start(user=operator, version=save_workflow(APPROVAL))  # its rounds run on commit
        deadline = time.monotonic() + 60  # the sender thread sends soon after the commit
        while not {(f"run-{run.pk}", "wake"), ("approvals", "wake")} <= set(sent) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert {(f"run-{run.pk}", "wake"), ("approvals", "wake")} <= set(sent)
