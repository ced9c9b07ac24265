"""A client of a run's Server-Sent Events (GET /api/v1/runs/{id}/events) on httpx, as a script follows a run:
each event as it arrives, with the moment it did, until the server ends the stream or the client drops it."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

MEDIA_TYPE = "text/event-stream"


class EventStream:
    """One stream: `events` (each `{"id", "event", "data", "received"}`, data parsed), `comments`, `status`."""

    def __init__(self, port: int, run_id: int, headers: dict[str, str], *, after: int | None = None):
        self.url = f"http://127.0.0.1:{port}/api/v1/runs/{run_id}/events" + (f"?after={after}" if after is not None
                                                                            else "")
        self.headers = {"Accept": MEDIA_TYPE, **headers}
        self.events: list[dict] = []
        self.comments: list[str] = []
        self.status: int | None = None
        self.retry: int | None = None
        self.ended = asyncio.Event()  # the server ended the body
        self.task: asyncio.Task | None = None

    def start(self) -> EventStream:
        self.task = asyncio.ensure_future(self._read())
        return self

    def ids(self) -> list[int]:
        return [event["id"] for event in self.events]

    async def until(self, last_id: int, *, timeout: float) -> list[int]:
        """The ids received once the event `last_id` has been; AssertionError past `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.events or self.events[-1]["id"] < last_id:
            assert not self.ended.is_set(), f"the stream ended before event {last_id}: {self.ids()}"
            assert time.monotonic() < deadline, f"no event {last_id} after {timeout} s: {self.ids()[-5:]}"
            await asyncio.sleep(0.01)
        return self.ids()

    async def drop(self) -> None:
        """The client goes away mid-stream (its connection closed)."""
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass

    async def _read(self) -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=None)) as client:
            async with client.stream("GET", self.url, headers=self.headers) as response:
                self.status = response.status_code
                self.content_type = response.headers.get("content-type", "")
                if self.status != 200:
                    self.body = (await response.aread()).decode()
                    self.ended.set()
                    return
                fields: dict[str, str] = {}
                async for line in response.aiter_lines():
                    if line:
                        name, _, value = line.partition(":")
                        fields[name] = value.removeprefix(" ")
                        continue
                    received = time.time()
                    if "event" in fields:
                        self.events.append({"id": int(fields["id"]), "event": fields["event"],
                                            "data": json.loads(fields["data"]), "received": received})
                    elif "retry" in fields:
                        self.retry = int(fields["retry"])
                    elif "" in fields:
                        self.comments.append(fields[""])
                    fields = {}
        self.ended.set()
