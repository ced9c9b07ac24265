"""The live stream of one run, gap-free.

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

from forge.console import stream
from forge.live import run_group

log = logging.getLogger(__name__)
FORBIDDEN, NOT_FOUND = 4403, 4404
LAYER_TIMEOUT_S = 5


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
        try:  # before the replay: see above
            await asyncio.wait_for(self.channel_layer.group_add(self.group, self.channel_name), LAYER_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - without wake-ups the poll still brings every event, only later
            log.warning("run %s: joining its group failed; polling only", self.run_id, exc_info=True)
        await self.push(first=True)

    async def disconnect(self, code):
        if self.poller is not None:
            self.poller.cancel()
        try:
            await asyncio.wait_for(self.channel_layer.group_discard(self.group, self.channel_name), LAYER_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - the group forgets it when its membership expires
            log.warning("run %s: leaving its group failed", self.run_id, exc_info=True)

    async def receive(self, text_data=None, bytes_data=None):
        try:
            message = json.loads(text_data) if text_data is not None else None
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == "ping":
            await self.send(text_data=json.dumps({"type": "pong"}))
        else:
            await self.send(text_data=json.dumps({"type": "error", "message": 'send {"type": "ping"} or nothing'}))

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
