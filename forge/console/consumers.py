"""The console's live sockets: the stream of one run (gap-free), and the list pages' change notices.

The run stream:

On connect the consumer joins the run's group first, then replays the run's events after the id the page
shows, then streams: nothing committed between the page's render and the socket's join is lost. Within a
run, RunEvent ids grow in commit order, because every round of a run holds the run's row lock
(forge/runtime/rounds.py) from before its inserts to its commit; so "every event after the last id sent" never
skips one. A wake-up (forge/live.py) or the poll makes the consumer read again; each read sends only ids
above the last one sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from forge.console import stream, watch
from forge.live import APPROVALS, run_group

log = logging.getLogger(__name__)
FORBIDDEN, NOT_FOUND = 4403, 4404
LAYER_TIMEOUT_S = 5
PAGE_CHECK_GAP_S = 0.1  # a burst of wake-ups costs a page's socket one check per gap, not one per wake-up


def _after(scope) -> int:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("after", ["0"])
    try:
        return max(0, int(values[0][:20]))
    except ValueError:
        return 0


class RunStream(AsyncWebsocketConsumer):
    async def connect(self):
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.group = run_group(self.run_id)
        self.last = _after(self.scope)
        self.lock = asyncio.Lock()
        self.poller = None
        await self.accept()
        verdict = await database_sync_to_async(stream.may_watch)(self.scope.get("user"), self.run_id)
        if verdict is not None:
            await self.close(code=FORBIDDEN if verdict == stream.FORBIDDEN else NOT_FOUND)
            return
        self.poller = asyncio.ensure_future(self.poll())
        await _join(self, [self.group])  # before the replay: see above
        await self.push(first=True)

    async def disconnect(self, code):
        if self.poller is not None:
            self.poller.cancel()
        await _leave(self, [self.group])

    async def receive(self, text_data=None, bytes_data=None):
        await _answer(self, text_data)

    async def wake(self, message):
        await self.push()

    async def poll(self):
        while True:
            await asyncio.sleep(settings.FORGE_LIVE_POLL_S)
            try:
                await self.push()
            except Exception:  # noqa: BLE001 - a database hiccup: the next poll tries again
                log.warning("run %s: reading its events failed", self.run_id, exc_info=True)

    async def push(self, first: bool = False):
        async with self.lock:
            if first:
                gap = await database_sync_to_async(stream.snapshot_if_too_far)(self.run_id, self.last)
                if gap is not None:
                    self.last = gap["last_id"]
                    await self.send(text_data=json.dumps(gap, default=str))
            while True:
                events = await database_sync_to_async(stream.events_after)(self.run_id, self.last)
                if not events:
                    return
                self.last = events[-1]["id"]
                await self.send(text_data=json.dumps({"type": "events", "events": events}, default=str))
                if len(events) < stream.CHUNK:
                    return


class PageStream(AsyncWebsocketConsumer):
    """`ws/live/?topics=runs`: tells a page when what it lists changed, so it reads itself again.

    Every page has the approvals topic (the top bar's badge: its count comes with the notice); a runs list or
    the dashboard adds `runs`. The first notice of each topic is sent on connect, so a change between the
    page's render and the socket's join is not missed. A wake-up or the poll makes it compare signatures.
    """

    async def connect(self):
        wanted = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("topics", [""])[0].split(",")
        self.topics = [APPROVALS] + [topic for topic in watch.TOPICS if topic in wanted and topic != APPROVALS]
        self.seen: dict[str, tuple] = {}
        self.woken = asyncio.Event()
        self.watcher = None
        await self.accept()
        if not await database_sync_to_async(watch.may_watch_pages)(self.scope.get("user")):
            await self.close(code=FORBIDDEN)
            return
        await _join(self, self.topics)
        self.watcher = asyncio.ensure_future(self.watch())

    async def disconnect(self, code):
        if self.watcher is not None:
            self.watcher.cancel()
            await _leave(self, self.topics)

    async def receive(self, text_data=None, bytes_data=None):
        await _answer(self, text_data)

    async def wake(self, message):
        self.woken.set()

    async def watch(self):
        while True:
            try:
                await self.check()
            except Exception:  # noqa: BLE001 - a database hiccup: the next check tries again
                log.warning("page stream: reading its topics failed", exc_info=True)
            await asyncio.sleep(PAGE_CHECK_GAP_S)
            try:
                await asyncio.wait_for(self.woken.wait(), settings.FORGE_LIVE_POLL_S)
            except asyncio.TimeoutError:
                pass
            self.woken.clear()

    async def check(self):
        user = self.scope["user"]
        for topic in self.topics:
            now = await database_sync_to_async(watch.signature)(user, topic)
            if self.seen.get(topic) != now:
                self.seen[topic] = now
                notice = {"type": "changed", "topic": topic}
                if topic == APPROVALS:
                    notice["count"] = len(now)
                await self.send(text_data=json.dumps(notice))


async def _join(consumer, groups: list[str]) -> None:
    for group in groups:
        try:
            await asyncio.wait_for(consumer.channel_layer.group_add(group, consumer.channel_name), LAYER_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - without wake-ups the poll still brings every change, only later
            log.warning("joining group %s failed; polling only", group, exc_info=True)


async def _leave(consumer, groups: list[str]) -> None:
    for group in groups:
        try:
            await asyncio.wait_for(consumer.channel_layer.group_discard(group, consumer.channel_name),
                                   LAYER_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - the group forgets it when its membership expires
            log.warning("leaving group %s failed", group, exc_info=True)


async def _answer(consumer, text_data) -> None:
    """The one message a client may send is a ping (to learn that a silent socket still works)."""
    try:
        message = json.loads(text_data) if text_data is not None else None
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("type") == "ping":
        await consumer.send(text_data=json.dumps({"type": "pong"}))
    else:
        await consumer.send(text_data=json.dumps({"type": "error", "message": 'send {"type": "ping"} or nothing'}))
