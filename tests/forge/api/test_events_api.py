"""`GET /api/v1/runs/{id}/events`: the run's events after an id, as Server-Sent Events through the real ASGI
application (as daphne drives it) or as pages of JSON; gap-free, in order, live, ending after the run's last
event, and refused as problems before any stream starts."""

from __future__ import annotations

import asyncio
import functools
import json
from urllib.parse import urlsplit

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from channels.layers import get_channel_layer
from django.db import OperationalError
from django.test import Client, override_settings

from forge.api import sse
from forge.asgi import application
from forge.runs.reads import stream as live_stream
from forge.accounts.tokens import token_create, token_revoke
from forge.live import run_group, user_group
from forge.runs import services
from forge.runs.models import Approval, RunEvent
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]
WAIT_S = 30  # a generous deadline for anything the stream should do at once
MAX_ID = 2**63 - 1


def sync(scenario):
    """Run an async test body on an event loop of its own."""
    @functools.wraps(scenario)
    def test(*args, **kwargs):
        return async_to_sync(scenario)(*args, **kwargs)
    return test


def url(run_id: int, query: str = "") -> str:
    return f"/api/v1/runs/{run_id}/events" + (f"?{query}" if query else "")


@pytest.fixture
def run(save_workflow, operator):
    """A run waiting for its sign_off approval, its first steps done."""
    return fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))


def event_ids(run) -> list[int]:
    return list(RunEvent.objects.filter(run=run).exclude(kind="input").order_by("id").values_list("id", flat=True))


def approve_and_finish(run, approver) -> None:
    """What the runtime does when the approval is given, up to the run's end."""
    services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="approve")
    fast_forward(run)


def cookie_of(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


class EventStream:
    """One GET of forge.asgi with `Accept: text/event-stream`, read as a client reads it: block by block."""

    def __init__(self, path: str, headers: list[tuple[bytes, bytes]]):
        parts = urlsplit(path)
        self.app = ApplicationCommunicator(application, {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": parts.path, "raw_path": parts.path.encode(), "query_string": parts.query.encode(),
            "root_path": "", "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
            "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", sse.MEDIA_TYPE.encode()), *headers]})
        self.text, self.finished = "", False

    async def open(self) -> tuple[int, dict[str, str]]:
        await self.app.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await self.app.receive_output(timeout=WAIT_S)
        return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}

    async def block(self) -> dict[str, str] | None:
        """The next block's fields (a comment under ':'), or None once the body has ended."""
        while "\n\n" not in self.text:
            if self.finished:
                return None
            body = await self.app.receive_output(timeout=WAIT_S)
            self.text += body.get("body", b"").decode()
            self.finished = not body.get("more_body", False)
        said, self.text = self.text.split("\n\n", 1)
        fields: dict[str, str] = {}
        for line in said.split("\n"):
            name, _, value = line.partition(":")
            fields[name] = fields.get(name, "") + value.removeprefix(" ")
        return fields

    async def events_until(self, last_id: int) -> list[dict]:
        """Every event block up to the one of `last_id`."""
        events = []
        while not events or int(events[-1]["id"]) < last_id:
            fields = await self.block()
            assert fields is not None, f"the stream ended before event {last_id}: {events}"
            if "event" in fields:
                events.append(fields)
        return events

    async def rest(self) -> list[dict]:
        """Every event block until the body ends."""
        events = []
        while (fields := await self.block()) is not None:
            if "event" in fields:
                events.append(fields)
        return events

    async def drop(self) -> None:
        """The client goes away mid-stream."""
        await self.app.send_input({"type": "http.disconnect"})
        await self.app.wait(timeout=WAIT_S)


async def opened(run_id: int, user, query: str = "", headers=()) -> EventStream:
    stream = EventStream(url(run_id, query), await sync_to_async(cookie_of)(user) + list(headers))
    status, answer = await stream.open()
    assert status == 200 and answer["content-type"].startswith(sse.MEDIA_TYPE), (status, answer)
    assert (await stream.block()) == {"retry": str(sse.RETRY_MS)}
    return stream


def ids(events: list[dict]) -> list[int]:
    return [int(event["id"]) for event in events]


@sync
async def test_it_replays_every_event_in_order_then_streams_the_next_until_the_run_s_last(run, approver):
    before = await sync_to_async(event_ids)(run)
    stream = await opened(run.pk, approver, "after=0")
    replayed = await stream.events_until(before[-1])
    assert ids(replayed) == before
    for event in replayed:  # each data line is the event itself, as the JSON pages give it
        assert json.loads(event["data"])["id"] == int(event["id"])
        assert json.loads(event["data"])["kind"] == event["event"]
    await sync_to_async(approve_and_finish)(run, approver)
    later = [i for i in await sync_to_async(event_ids)(run) if i > before[-1]]
    streamed = await stream.rest()
    assert later and ids(streamed) == later  # then the body ended: after the run's final event
    final = json.loads(streamed[-1]["data"])
    assert (final["kind"], final["data"]["status"]) == ("run", "completed")


@sync
async def test_a_resume_from_last_event_id_after_a_dropped_connection_gets_exactly_the_missing_events(run, approver):
    before = await sync_to_async(event_ids)(run)
    middle = before[len(before) // 2]
    first = await opened(run.pk, approver, "after=0")
    assert ids(await first.events_until(middle))[-1] == middle
    await first.drop()
    await sync_to_async(approve_and_finish)(run, approver)  # while the client is away
    every = await sync_to_async(event_ids)(run)
    # A reconnecting EventSource sends its first URL again: the header says where it really was.
    again = await opened(run.pk, approver, "after=0", [(b"last-event-id", str(middle).encode())])
    assert ids(await again.rest()) == [i for i in every if i > middle]


@sync
async def test_a_wake_up_through_the_run_s_group_brings_new_events_without_waiting_for_the_re_read(run, approver):
    before = await sync_to_async(event_ids)(run)
    with override_settings(FORGE_LIVE_POLL_S=600):  # far beyond the deadline: only the wake-up can bring them
        stream = await opened(run.pk, approver, f"after={before[-1]}")
        layer = get_channel_layer()
        await until(lambda: len(layer.groups.get(run_group(run.pk), {})) == 1)
        await sync_to_async(approve_and_finish)(run, approver)
        await layer.group_send(run_group(run.pk), {"type": "wake"})  # what forge.live sends after a round
        later = [i for i in await sync_to_async(event_ids)(run) if i > before[-1]]
        assert ids(await stream.events_until(later[-1])) == later
        await stream.drop()


@sync
async def test_a_failed_read_is_tried_again_from_the_last_id_sent(run, approver, monkeypatch):
    reads, read = [], live_stream.event_texts

    def failing_once(*args, **kwargs):
        reads.append(args)
        if len(reads) == 1:
            raise OperationalError("database is locked")
        return read(*args, **kwargs)

    monkeypatch.setattr(live_stream, "event_texts", failing_once)
    before = await sync_to_async(event_ids)(run)
    stream = await opened(run.pk, approver)
    assert ids(await stream.events_until(before[-1])) == before and len(reads) > 1
    await stream.drop()


@sync
async def test_a_dropped_stream_leaves_the_run_s_group(run, approver):
    layer = get_channel_layer()
    streams = [await opened(run.pk, approver) for _ in range(3)]
    await until(lambda: len(layer.groups.get(run_group(run.pk), {})) == 3)
    for stream in streams:
        await stream.drop()
    assert not layer.groups.get(run_group(run.pk))


@sync
async def test_an_idle_stream_says_it_is_alive(run, approver, monkeypatch):
    monkeypatch.setattr(sse, "HEARTBEAT_S", 0.05)
    last = (await sync_to_async(event_ids)(run))[-1]
    stream = await opened(run.pk, approver, f"after={last}")
    assert await stream.block() == {"": "keep-alive"}  # a comment: no event, no id
    await stream.drop()


@sync
async def test_too_far_behind_it_gets_a_snapshot_then_the_events_after_it(run, approver):
    before = await sync_to_async(event_ids)(run)
    with override_settings(FORGE_LIVE_REPLAY_MAX=2):
        stream = await opened(run.pk, approver)
        snapshot = await stream.block()
    assert (snapshot["event"], int(snapshot["id"])) == ("snapshot", before[-1])
    assert json.loads(snapshot["data"])["steps"]["sign_off"]["status"] == "waiting"
    await sync_to_async(approve_and_finish)(run, approver)
    assert ids(await stream.rest()) == [i for i in await sync_to_async(event_ids)(run) if i > before[-1]]


@sync
async def test_after_the_end_a_stream_ends_with_the_last_event_and_a_reconnect_gets_204(run, approver):
    await sync_to_async(approve_and_finish)(run, approver)
    every = await sync_to_async(event_ids)(run)
    stream = await opened(run.pk, approver)
    assert ids(await stream.rest()) == every
    resume = [(b"last-event-id", str(every[-1]).encode())]
    late = EventStream(url(run.pk), await sync_to_async(cookie_of)(approver) + resume)
    assert (await late.open())[0] == 204


@sync
async def test_a_stream_ends_at_once_when_its_person_may_no_longer_watch(run, approver, monkeypatch):
    monkeypatch.setattr(sse, "RECHECK_S", 600)  # only the person's group can say it within the deadline
    with override_settings(FORGE_LIVE_POLL_S=600):
        last = (await sync_to_async(event_ids)(run))[-1]
        stream = await opened(run.pk, approver, f"after={last}")
        layer = get_channel_layer()
        await until(lambda: len(layer.groups.get(user_group(approver.pk), {})) == 1)
        await sync_to_async(lambda: approver.groups.clear())()  # session_signals tells the person's group
        assert await stream.rest() == []
    assert not layer.groups.get(user_group(approver.pk)) and not layer.groups.get(run_group(run.pk))
    late = EventStream(url(run.pk), await sync_to_async(cookie_of)(approver))
    assert (await late.open())[0] == 403


@sync
async def test_a_stream_through_a_token_ends_once_the_token_is_revoked(run, approver, monkeypatch):
    monkeypatch.setattr(sse, "RECHECK_S", 0.05)
    token, secret = await sync_to_async(token_create)(user=approver, name="ci", scopes=["runs:read"])
    bearer = [(b"authorization", f"Bearer {secret}".encode())]
    last = (await sync_to_async(event_ids)(run))[-1]
    stream = EventStream(url(run.pk, f"after={last}"), bearer)
    assert (await stream.open())[0] == 200
    assert await stream.block() == {"retry": str(sse.RETRY_MS)}
    await sync_to_async(token_revoke)(user=approver, token=token)
    assert await stream.rest() == []
    again = EventStream(url(run.pk), bearer)
    assert (await again.open())[0] == 401


async def until(condition) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "still not so"
        await asyncio.sleep(0.01)


# -- the pages of JSON ---------------------------------------------------------------------------------------


def problem_of_answer(answer) -> dict:
    assert answer["Content-Type"] == "application/problem+json", answer.content
    assert not answer.streaming
    return answer.json()


def page(client, run_id, query="", **headers):
    answer = client.get(url(run_id, query), **headers)
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_pages_of_json_give_every_event_once_in_order_and_say_when_the_run_ended(run, approver):
    client = Client()
    client.force_login(approver)
    before = event_ids(run)
    first = page(client, run.pk, "limit=2")
    assert [e["id"] for e in first["events"]] == before[:2] and first["last_id"] == before[1]
    assert not first["ended"]
    approve_and_finish(run, approver)
    seen, after, ended = [], 0, False
    while not ended:
        answer = page(client, run.pk, f"after={after}&limit=2")
        seen += [e["id"] for e in answer["events"]]
        after, ended = answer["last_id"], answer["ended"]
    assert seen == event_ids(run)
    assert page(client, run.pk, f"after={after}") == {"events": [], "last_id": after, "ended": True}


def test_a_json_event_is_the_stream_s_event(run, approver):
    client = Client()
    client.force_login(approver)
    event = page(client, run.pk, "limit=1")["events"][0]
    assert set(event) == {"id", "kind", "step", "data", "at"}
    assert (event["kind"], event["data"]) == ("run", {"status": "pending"})


BAD_IDS = [
    ("after=abc", {}), ("after=-1", {}), ("after=1.5", {}), ("after=%2B3", {}), ("after=%203", {}),
    (f"after={MAX_ID + 1}", {}), ("after=" + "9" * 40, {}), ("after=%D9%A1", {}), ("after=", {}),
    ("", {"HTTP_LAST_EVENT_ID": "x"}), ("", {"HTTP_LAST_EVENT_ID": "-5"}),
    ("after=0", {"HTTP_LAST_EVENT_ID": str(MAX_ID + 1)}),
]
BAD_LIMITS = [("limit=0", {}), ("limit=1001", {}), ("limit=ten", {})]  # a stream has no pages


@pytest.mark.parametrize("query, headers, accept", [
    *[(query, headers, accept) for query, headers in BAD_IDS for accept in ("application/json", sse.MEDIA_TYPE)],
    *[(query, headers, "application/json") for query, headers in BAD_LIMITS],
])
def test_a_bad_id_or_limit_is_a_400_problem(run, approver, query, headers, accept):
    client = Client()
    client.force_login(approver)
    answer = client.get(url(run.pk, query), HTTP_ACCEPT=accept, **headers)
    assert answer.status_code == 400 and problem_of_answer(answer)["type"].endswith("/bad-request")


@pytest.mark.parametrize("query", [f"after={MAX_ID}", "after=0&limit=1", "after=0&limit=1000", "after=007"])
def test_the_bounds_of_ids_and_limits_are_taken(run, approver, query):
    client = Client()
    client.force_login(approver)
    page(client, run.pk, query)


def test_a_token_with_runs_read_reads_the_pages(run, approver):
    _, secret = token_create(user=approver, name="ci", scopes=["runs:read"])
    answer = Client().get(url(run.pk), HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 200 and [e["id"] for e in answer.json()["events"]] == event_ids(run)


@pytest.mark.parametrize("accept", ["application/json", sse.MEDIA_TYPE])
def test_a_token_without_runs_read_is_a_403_problem(run, approver, accept):
    _, secret = token_create(user=approver, name="ci", scopes=["approvals:decide"])
    answer = Client().get(url(run.pk), HTTP_ACCEPT=accept, HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 403 and problem_of_answer(answer)["type"].endswith("/scope-missing")


@pytest.mark.parametrize("accept", ["application/json", sse.MEDIA_TYPE])
def test_an_unknown_token_is_a_401_problem(run, accept):
    answer = Client().get(url(run.pk), HTTP_ACCEPT=accept, HTTP_AUTHORIZATION="Bearer forge_pat_" + "x" * 43)
    assert answer.status_code == 401 and problem_of_answer(answer)["status"] == 401


@pytest.mark.parametrize("accept", ["application/json", sse.MEDIA_TYPE])
def test_nobody_signed_in_is_a_401_problem(run, accept):
    answer = Client().get(url(run.pk), HTTP_ACCEPT=accept)
    assert answer.status_code == 401 and problem_of_answer(answer)["status"] == 401


@pytest.mark.parametrize("accept", ["application/json", sse.MEDIA_TYPE])
def test_an_outsider_is_a_403_problem_without_a_stream(run, accept):
    client = Client()
    client.force_login(member("oscar"))
    answer = client.get(url(run.pk), HTTP_ACCEPT=accept)
    assert answer.status_code == 403 and problem_of_answer(answer)["type"].endswith("/forbidden")


@pytest.mark.parametrize("run_id", [999999, MAX_ID, MAX_ID + 1])
@pytest.mark.parametrize("accept", ["application/json", sse.MEDIA_TYPE])
def test_an_unknown_run_is_a_404_problem(approver, accept, run_id):
    client = Client()
    client.force_login(approver)
    answer = client.get(url(run_id), HTTP_ACCEPT=accept)
    assert answer.status_code == 404 and problem_of_answer(answer)["type"].endswith("/not-found")


def test_the_operation_only_reads(run, approver):
    client = Client(enforce_csrf_checks=False)
    client.force_login(approver)
    answer = client.post(url(run.pk), data={}, content_type="application/json")
    assert answer.status_code == 405 and problem_of_answer(answer)["status"] == 405


@pytest.mark.parametrize("accept, expected", [
    ("text/event-stream", True), ("Text/Event-Stream; charset=utf-8", True), ("application/json, text/event-stream",
                                                                            True),
    ("text/event-stream;q=0", False), ("*/*", False), ("text/*", False), ("", False), ("text/event-streams", False),
])
def test_the_stream_is_for_a_client_that_accepts_it(accept, expected):
    assert sse.wants_event_stream(accept) is expected
