"""A run's events as Server-Sent Events (docs/design/api.md, section 5): the run view's socket for scripts.

The stream reads what the socket reads (forge/console/stream.py) in the socket's order: it joins the run's
group first (a new channel of the channel layer), then replays the events after the client's id (a snapshot
when too far behind), then sends what each wake-up (forge/live.py) or the safety re-read finds, only ids above
the last one sent. It ends once the run has ended and its last event was sent: the run's status is read
before the events, so the read after it holds the final round's events. A client that comes back after the
end gets 204, which tells a browser's EventSource to stop reconnecting.

Each event is `id: <RunEvent id>`, `event: <kind>`, `data: <the event's JSON on one line>`; a snapshot is
`event: snapshot` with the id of the last event it covers. A comment (`: keep-alive`) goes every HEARTBEAT_S
while nothing else does, so proxies keep an idle stream open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse

from forge.console import stream
from forge.live import run_group

log = logging.getLogger(__name__)
MEDIA_TYPE = "text/event-stream"
RETRY_MS = 3000  # how long a client waits before reconnecting with its Last-Event-ID
HEARTBEAT_S = 15.0
LAYER_TIMEOUT_S = 30  # longer than the pool's wait for a free connection (settings.CHANNEL_LAYERS)
KEEP_ALIVE = ": keep-alive\n\n"


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


def event_stream(run_id: int, after: int) -> StreamingHttpResponse:
    """The stream of the run's events after `after`, then live, until the run's last."""
    response = StreamingHttpResponse(_events(run_id, after), content_type=f"{MEDIA_TYPE}; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would hold the events in its buffer
    return response


def message(event_id: int, kind: str, data: str) -> str:
    return f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n"


class _Reader:
    """The last id sent, and the messages of what came after it."""

    def __init__(self, run_id: int, after: int):
        self.run_id, self.last = run_id, after

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
                yield "".join(message(event_id, kind, text) for event_id, kind, text in found)
            if len(found) < stream.CHUNK:
                return


async def _events(run_id: int, after: int) -> AsyncIterator[str]:
    layer = get_channel_layer()
    woken = asyncio.Event()
    channel = await _join(layer, run_group(run_id))
    listener = asyncio.ensure_future(_listen(layer, channel, woken)) if channel else None
    loop = asyncio.get_running_loop()
    try:
        yield f"retry: {RETRY_MS}\n\n"
        reader = _Reader(run_id, after)
        if (snapshot := await reader.snapshot()) is not None:
            yield snapshot
        said_at = loop.time()
        while True:
            async for text in reader.pending():
                yield text
                said_at = loop.time()
            if await database_sync_to_async(stream.run_ended)(run_id):
                async for text in reader.pending():  # the final round's events, committed with its status
                    yield text
                return
            quiet = loop.time() - said_at
            try:
                await asyncio.wait_for(woken.wait(), max(0.0, min(settings.FORGE_LIVE_POLL_S, HEARTBEAT_S - quiet)))
            except asyncio.TimeoutError:
                pass  # the safety re-read: a wake-up lost (a full layer, no Redis) costs one interval
            woken.clear()
            if loop.time() - said_at >= HEARTBEAT_S:
                yield KEEP_ALIVE
                said_at = loop.time()
    finally:
        if listener is not None:
            listener.cancel()
        if channel:
            await _leave(layer, run_group(run_id), channel)


async def _join(layer, group: str) -> str | None:
    """A new channel in `group`, or None when the layer cannot take one (the re-read then brings every event)."""
    if layer is None:
        return None
    try:
        channel = await layer.new_channel()
        await asyncio.wait_for(layer.group_add(group, channel), LAYER_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a stream without wake-ups is slower, not wrong
        log.warning("an event stream could not join group %s: it reads every FORGE_LIVE_POLL_S (%s s)", group,
                    settings.FORGE_LIVE_POLL_S, exc_info=True)
        return None
    return channel


async def _listen(layer, channel: str, woken: asyncio.Event) -> None:
    """Set `woken` at each wake-up the channel receives; one receive at a time, cancelled when the stream ends."""
    try:
        while True:
            await layer.receive(channel)
            woken.set()
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the re-read still brings every event, only later
        log.warning("an event stream stopped hearing wake-ups on %s", channel, exc_info=True)


async def _leave(layer, group: str, channel: str) -> None:
    # Shielded: a second cancel (the server stopping) must not leave the channel in the group.
    try:
        await asyncio.shield(asyncio.wait_for(layer.group_discard(group, channel), LAYER_TIMEOUT_S))
    except (Exception, asyncio.CancelledError):  # noqa: BLE001 - the group forgets it when its membership expires
        log.warning("an event stream could not leave group %s", group, exc_info=True)
