"""The console's live sockets: the stream of one run (gap-free), and the list pages' change notices.

The run stream:

On connect the consumer joins the run's group first, then replays the run's events after the id the page
shows, then streams: nothing committed between the page's render and the socket's join is lost. Within a
run, RunEvent ids grow in commit order, because every round of a run holds the run's row lock
(forge/runtime/rounds.py) from before its inserts to its commit; so "every event after the last id sent" never
skips one. A wake-up (forge/live.py) or the poll makes the consumer read again; each read sends only ids
above the last one sent.

Both sockets follow the session they were opened with (forge/accounts/session_watch.py): a logout, a password
change, being deactivated or leaving one's groups closes them with 4403.
"""

from __future__ import annotations

import asyncio
import json
import logging
from types import SimpleNamespace
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user

from forge.accounts import session_watch
from forge.console import watch
from forge.runs.reads import stream
from forge.console.socket_stats import counts
from forge.live import APPROVALS, run_group, user_group

log = logging.getLogger(__name__)
FORBIDDEN, NOT_FOUND = 4403, 4404
LAYER_TIMEOUT_S = 30  # longer than the pool's wait for a free connection (settings.CHANNEL_LAYERS)
PAGE_CHECK_GAP_S = 0.1  # a burst of wake-ups costs a page's socket one check per gap, not one per wake-up


def _after(scope) -> int:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("after", ["0"])
    try:
        return max(0, int(values[0][:20]))
    except ValueError:
        return 0


def _admit(scope, refusal) -> tuple[int | None, session_watch.Ticket | None]:
    """The handshake's person, from its session (Django's own check of the session's password hash), put in the
    scope; then `refusal(user)`'s close code, or the ticket of the session to follow."""
    scope["user"] = get_user(SimpleNamespace(session=scope["session"]))
    code = refusal(scope["user"])
    if code is not None:
        return code, None
    ticket = session_watch.ticket_of(scope)
    return (None, ticket) if ticket is not None else (FORBIDDEN, None)


class FollowsSession(AsyncWebsocketConsumer):
    """A socket closed (4403) once the session it was opened with ends or no longer lets its person watch."""

    groups_joined: list[str] = []
    ticket: session_watch.Ticket | None = None
    revoked = False

    async def admit(self, refusal) -> bool:
        """Accept the handshake at once, then keep the socket only for a session `refusal` has no code for.

        Nothing is read before the accept, so a burst of sockets is not held at its handshake (daphne drops one
        not accepted in time: forge/supervisor.py) while the database serves the others; who may watch is read
        in one go.
        """
        await self.accept()
        code, self.ticket = await database_sync_to_async(_admit)(self.scope, refusal)
        if code is not None:
            await self.close(code=code)
            return False
        session_watch.follow(self, self.ticket)
        counts["open"] += 1
        counts["opened"] += 1
        return True

    async def join(self, groups: list[str]) -> None:
        """Join `groups` and the person's own group (where session checks are sent)."""
        self.groups_joined = [*groups, user_group(self.ticket.user_id)]
        await _join(self, self.groups_joined)

    async def session_check(self, message):
        if self.ticket is None or self.revoked:
            return
        if message.get("ended") == self.ticket.digest:
            await self.revoke()  # this session's logout: nothing to read
        else:
            session_watch.check_soon()

    async def revoke(self):
        """Close the socket for its session: its ticket failed the check, or this session logged out."""
        if self.revoked:
            return
        self.revoked = True
        counts["closed_for_session"] += 1
        self.stop()
        await self.close(code=FORBIDDEN)

    def stop(self) -> None:
        """Cancel the socket's own tasks."""

    async def disconnect(self, code):
        self.stop()
        if self.ticket is not None:
            session_watch.forget(self)
            counts["open"] -= 1
        await _leave(self, self.groups_joined)


class RunStream(FollowsSession):
    async def connect(self):
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.group = run_group(self.run_id)
        self.last = _after(self.scope)
        self.lock = asyncio.Lock()
        self.poller = None
        if not await self.admit(self.refusal):
            return
        self.poller = asyncio.ensure_future(self.poll())
        await self.join([self.group])  # before the replay: see above
        await self.push(first=True)

    def refusal(self, user) -> int | None:
        verdict = stream.may_watch(user, self.run_id)
        return None if verdict is None else FORBIDDEN if verdict == stream.FORBIDDEN else NOT_FOUND

    def stop(self) -> None:
        if self.poller is not None:
            self.poller.cancel()

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
            if self.revoked:
                return
            if first:
                gap = await database_sync_to_async(stream.snapshot_if_too_far)(self.run_id, self.last)
                if gap is not None:
                    self.last = gap["last_id"]
                    await self.send(text_data=json.dumps(gap, default=str))
            while True:
                frame = await database_sync_to_async(stream.events_frame)(self.run_id, self.last)
                if frame is None:
                    return
                text, self.last, count = frame
                await self.send(text_data=text)
                if count < stream.CHUNK:
                    return


class PageStream(FollowsSession):
    """`ws/live/?topics=runs,approvals`: htmx's ws extension on every page (base.html) hears here when what the
    page lists changed, as HTML it swaps in (watch.notice): the badge's count, and a fresh read of the page.

    Every page watches approvals (the top bar's badge); `topics` names what the page lists besides (a runs list
    `runs`, the inbox `approvals`, the dashboard both). Every topic counts as changed on connect, so a change
    between the page's render and the socket's join is not missed. A wake-up or the poll makes it compare
    signatures.
    """

    async def connect(self):
        wanted = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("topics", [""])[0].split(",")
        self.listed = [topic for topic in watch.TOPICS if topic in wanted]
        self.topics = [APPROVALS] + [topic for topic in self.listed if topic != APPROVALS]
        self.seen: dict[str, tuple] = {}
        self.woken = asyncio.Event()
        self.watcher = None
        if not await self.admit(lambda user: None if watch.may_watch_pages(user) else FORBIDDEN):
            return
        await self.join(self.topics)
        if not self.revoked:
            self.watcher = asyncio.ensure_future(self.watch())

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()

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
        changed = []
        for topic in self.topics:
            now = await database_sync_to_async(watch.signature)(user, topic)
            if self.seen.get(topic) != now:
                self.seen[topic] = now
                changed.append(topic)
        if changed:
            await self.send(text_data=watch.notice(changed, self.listed, len(self.seen[APPROVALS])))


async def _join(consumer, groups: list[str]) -> None:
    failed = False
    for group in groups:
        try:
            await asyncio.wait_for(consumer.channel_layer.group_add(group, consumer.channel_name), LAYER_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - without wake-ups the poll still brings every change, only later
            if not failed and not counts["polling_only"]:  # once: a burst of failures would flood the log
                log.warning("a live socket could not join group %s: it, and any other that fails to, sees changes "
                            "only every FORGE_LIVE_POLL_S (%s s); GET /live/status/ counts them", group,
                            settings.FORGE_LIVE_POLL_S, exc_info=True)
            failed = True
    if failed:
        counts["polling_only"] += 1


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
    except (ValueError, RecursionError):  # a message nested past the parser's depth is as bad as garbage
        message = None
    if isinstance(message, dict) and message.get("type") == "ping":
        await consumer.send(text_data=json.dumps({"type": "pong"}))
    else:
        await consumer.send(text_data=json.dumps({"type": "error", "message": 'send {"type": "ping"} or nothing'}))
