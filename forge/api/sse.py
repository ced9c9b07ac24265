"""A run's events as Server-Sent Events (docs/design/api.md, section 5): the run view's socket for scripts.

The stream reads what the socket reads (forge/runs/reads/stream.py) in the socket's order: it joins the run's
group first (a new channel of the channel layer), then replays the events after the client's id (a snapshot
when too far behind), then sends what each wake-up (forge/live.py) or the safety re-read finds, only ids above
the last one sent. It ends once the run has ended and its last event was sent: the run's status is looked at
after a read that brought one of the run's own events (a run ends with one, committed with its status), on the
first read and every RECHECK_S, and the read after it holds the final round's events. A client that comes
back after the end gets 204, which tells a browser's EventSource to stop reconnecting.

As a socket lives only as long as its session, a stream lives only as long as what let it start: every
RECHECK_S, and at once when the person's group hears that their session or rights changed
(forge/console/session_signals.py), `allowed()` is asked again (the session still valid, or the token still
unrevoked and unexpired; the person still may watch); when it says no, the stream ends, and the client's
reconnection is refused.

Each event is `id: <RunEvent id>`, `event: <kind>`, `data: <the event's JSON on one line>`; a snapshot is
`event: snapshot` with the id of the last event it covers. A comment (`: keep-alive`) goes every HEARTBEAT_S
while nothing else does, so proxies keep an idle stream open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse

from forge.api.auth import user_for_bearer
from forge.accounts import session_watch
from forge.runs.reads import stream
from forge.errors import Unauthenticated
from forge.live import run_group, user_group

log = logging.getLogger(__name__)
MEDIA_TYPE = "text/event-stream"
RETRY_MS = 3000  # how long a client waits before reconnecting with its Last-Event-ID
HEARTBEAT_S = 15.0
RECHECK_S = 5.0  # a stream per script, not one page per person: not every second, as the sockets' batched check
LAYER_TIMEOUT_S = 30  # longer than the pool's wait for a free connection (settings.CHANNEL_LAYERS)
KEEP_ALIVE = ": keep-alive\n\n"
RUN = "run"  # the kind of the run's own events (forge/runtime/rounds.py), its last among them


def wants_event_stream(accept: str) -> bool:
    """Whether an Accept header names text/event-stream (with any parameters, unless q=0 refuses it)."""
    for item in accept.split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media == MEDIA_TYPE and not any(_refused_q(param) for param in params):
            return True
    return False


def _refused_q(param: str) -> bool:
    name, _, value = param.partition("=")
    if name.strip() != "q":
        return False
    try:
        return float(value) <= 0
    except ValueError:
        return False


def event_stream(run_id: int, after: int, *, user_id: int, allowed: Callable[[], bool]) -> StreamingHttpResponse:
    """The stream of the run's events after `after`, then live, until the run's last, for as long as `allowed()`
    (a database read) says the person `user_id` may still watch."""
    response = StreamingHttpResponse(_events(run_id, after, user_id, allowed),
                                     content_type=f"{MEDIA_TYPE}; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would hold the events in its buffer
    return response


def allowed_for(request, run_id: int) -> Callable[[], bool]:
    """Whether what let `request` start a stream of the run still lets it watch, asked again from the database:
    its token as forge/api/auth.py reads one, or its session as the sockets' is (forge/accounts/session_watch.py);
    then the rule of who may watch."""
    if getattr(request.user, "forge_token", None) is not None:
        header = SimpleNamespace(META={"HTTP_AUTHORIZATION": request.META.get("HTTP_AUTHORIZATION", "")})

        def token_allows() -> bool:
            try:
                user = user_for_bearer(header)
            except Unauthenticated:
                return False
            return user is not None and stream.may_watch(user, run_id) is None
        return token_allows
    ticket = session_watch.ticket_of({"user": request.user, "session": getattr(request, "session", None)})
    return lambda: ticket is not None and not session_watch.revoked({ticket})


def message(event_id: int, kind: str, data: str) -> str:
    return f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n"


class _Reader:
    """The last id sent, and the messages of what came after it."""

    def __init__(self, run_id: int, after: int):
        self.run_id, self.last = run_id, after
        self.read_run_event = False  # since it was last reset: one of the run's own events was read

    async def snapshot(self) -> str | None:
        gap = await database_sync_to_async(stream.snapshot_if_too_far)(self.run_id, self.last)
        if gap is None:
            return None
        self.last = gap["last_id"]
        return message(self.last, "snapshot", json.dumps(gap, default=str))

    async def pending(self) -> AsyncIterator[str]:
        """Every event after the last id sent, a chunk of messages at a time."""
        while True:
            found = await database_sync_to_async(stream.event_texts)(self.run_id, self.last)
            if found:
                self.last = found[-1][0]
                self.read_run_event = self.read_run_event or any(kind == RUN for _, kind, _ in found)
                yield "".join(message(event_id, kind, text) for event_id, kind, text in found)
            if len(found) < stream.CHUNK:
                return


class _Hearing:
    """What the stream's channel heard: a wake-up, or that the person's session or rights changed."""

    def __init__(self):
        self.woken = asyncio.Event()
        self.check = False


async def _events(run_id: int, after: int, user_id: int, allowed: Callable[[], bool]) -> AsyncIterator[str]:
    layer = get_channel_layer()
    heard = _Hearing()
    groups = [run_group(run_id), user_group(user_id)]
    channel = await _join(layer, groups)
    listener = asyncio.ensure_future(_listen(layer, channel, heard)) if channel else None
    loop = asyncio.get_running_loop()
    try:
        yield f"retry: {RETRY_MS}\n\n"
        reader = _Reader(run_id, after)
        if (snapshot := await reader.snapshot()) is not None:
            yield snapshot
        said_at = checked_at = loop.time()
        first = True
        while True:
            read_at = loop.time()
            try:
                async for text in reader.pending():
                    yield text
                    said_at = loop.time()
                due = heard.check or loop.time() - checked_at >= RECHECK_S
                # A run ends with a `run` event committed with its status: a read that brought none needs no look
                # at the status, but the first does (the run may have ended before it), and every RECHECK_S.
                if (first or due or reader.read_run_event) and await database_sync_to_async(stream.run_ended)(run_id):
                    async for text in reader.pending():  # the final round's events, committed with its status
                        yield text
                    return
                first = reader.read_run_event = False
                if due:
                    heard.check, checked_at = False, loop.time()
                    if not await database_sync_to_async(allowed)():
                        return
            except Exception:  # noqa: BLE001 - a database hiccup: the next read tries again from the last id sent
                log.warning("run %s: reading its events for a stream failed", run_id, exc_info=True)
            now = loop.time()
            # The re-read's interval counts from the start of the last read: a slow read does not stretch it.
            wait = min(settings.FORGE_LIVE_POLL_S - (now - read_at), HEARTBEAT_S - (now - said_at),
                       RECHECK_S - (now - checked_at))
            try:
                await asyncio.wait_for(heard.woken.wait(), max(0.0, wait))
            except asyncio.TimeoutError:
                pass  # the safety re-read: a wake-up lost (a full layer, no Redis) costs one interval
            heard.woken.clear()
            if loop.time() - said_at >= HEARTBEAT_S:
                yield KEEP_ALIVE
                said_at = loop.time()
    finally:
        if listener is not None:
            listener.cancel()
        if channel:
            await _leave(layer, groups, channel)


async def _join(layer, groups: list[str]) -> str | None:
    """A new channel in `groups`, or None when the layer cannot take one (the re-reads then do everything)."""
    if layer is None:
        return None
    channel = None
    try:
        channel = await layer.new_channel()
        for group in groups:
            await asyncio.wait_for(layer.group_add(group, channel), LAYER_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a stream without wake-ups is slower, not wrong
        log.warning("an event stream could not join %s: it reads every FORGE_LIVE_POLL_S (%s s)", groups,
                    settings.FORGE_LIVE_POLL_S, exc_info=True)
        if channel is not None:
            await _leave(layer, groups, channel)
        return None
    return channel


async def _listen(layer, channel: str, heard: _Hearing) -> None:
    """Note each message the channel receives; one receive at a time, cancelled when the stream ends."""
    try:
        while True:
            message = await layer.receive(channel)
            heard.check = heard.check or message.get("type") == "session.check"
            heard.woken.set()
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the re-reads still bring every event, only later
        log.warning("an event stream stopped hearing wake-ups on %s", channel, exc_info=True)


async def _leave(layer, groups: list[str], channel: str) -> None:
    for group in groups:
        # Shielded: a second cancel (the server stopping) must not leave the channel in the group.
        try:
            await asyncio.shield(asyncio.wait_for(layer.group_discard(group, channel), LAYER_TIMEOUT_S))
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - the group forgets it when its membership expires
            log.warning("an event stream could not leave group %s", group, exc_info=True)
