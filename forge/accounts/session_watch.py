"""A live socket lives only as long as the session it was opened with.

A socket is admitted with the session cookie of its handshake; from then on nothing would look at that session
again. So every socket holds a ticket (its person, its session key, the session's password hash), and one task
per event loop (daphne has one) checks every ticket every FORGE_LIVE_SESSION_CHECK_S: the session still exists
(no logout), its hash still matches the person's password (no password change), the person is active and may
still see runs (`run.view`: a group, or a superuser). A failed ticket's socket is closed with 4403.

The check costs two queries per period per process, whatever the number of sockets (500 sockets: two queries
a second with the default, each reading at most 500 rows by primary key), not one per socket. Signals
(forge/console/session_signals.py) make it immediate: they ask the sockets of a person to check now.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass, field

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, get_user_model
from django.contrib.sessions.models import Session
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from forge.accounts.roles import ACTIONS
from forge.live import session_digest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ticket:
    user_id: int
    session_key: str = field(repr=False)
    auth_hash: str = field(repr=False)

    @property
    def digest(self) -> str:
        """How a logout's message names the session it ended."""
        return session_digest(self.session_key)


def ticket_of(scope) -> Ticket | None:
    """The ticket of a handshake's logged-in session (AuthMiddlewareStack put both in the scope), or None."""
    user, session = scope.get("user"), scope.get("session")
    if user is None or not user.is_authenticated or session is None or not session.session_key:
        return None
    auth_hash = session.get(HASH_SESSION_KEY)
    return Ticket(user.pk, session.session_key, auth_hash) if auth_hash else None


def revoked(tickets: set[Ticket]) -> set[Ticket]:
    """The tickets whose session ended, whose person changed password, was deactivated or may not see runs."""
    if not tickets:
        return set()
    alive = set(Session.objects.filter(session_key__in={t.session_key for t in tickets},
                                       expire_date__gt=timezone.now()).values_list("session_key", flat=True))
    user_model = get_user_model()
    # roles.can(user, "run.view") in SQL: active, and a superuser or in a group allowed to view
    viewer = user_model.groups.through.objects.filter(**{user_model.groups.field.m2m_field_name(): OuterRef("pk")},
                                                      group__name__in=ACTIONS["run.view"])
    rows = (user_model.objects.filter(pk__in={t.user_id for t in tickets}).annotate(member=Exists(viewer))
            .values_list("pk", "password", "is_active", "is_superuser", "member"))
    valid_hash = {pk: user_model(pk=pk, password=password).get_session_auth_hash()
                  for pk, password, active, superuser, member in rows if active and (superuser or member)}
    return {t for t in tickets if t.session_key not in alive or t.user_id not in valid_hash
            or not constant_time_compare(valid_hash[t.user_id], t.auth_hash)}


class _Watch:
    """The followed sockets of one event loop, and the task that checks them."""

    def __init__(self):
        self.sockets: dict = {}  # consumer -> Ticket
        self.soon = asyncio.Event()
        self.task: asyncio.Task | None = None


_watches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> _Watch


def follow(consumer, ticket: Ticket) -> None:
    """Check `consumer`'s ticket from now on; `await consumer.revoke()` when it fails."""
    watch = _watches.setdefault(asyncio.get_running_loop(), _Watch())
    watch.sockets[consumer] = ticket
    if watch.task is None or watch.task.done():
        watch.task = asyncio.ensure_future(_check_forever(watch))


def forget(consumer) -> None:
    watch = _watches.get(asyncio.get_running_loop())
    if watch is not None:
        watch.sockets.pop(consumer, None)
        if not watch.sockets:
            watch.soon.set()  # the task sees nothing left to check and ends


def check_soon() -> None:
    """Check every socket of this loop now rather than at the end of the period (a signal said something changed)."""
    watch = _watches.get(asyncio.get_running_loop())
    if watch is not None:
        watch.soon.set()


async def _check_forever(watch: _Watch) -> None:
    while watch.sockets:
        try:
            await asyncio.wait_for(watch.soon.wait(), settings.FORGE_LIVE_SESSION_CHECK_S)
        except asyncio.TimeoutError:
            pass
        watch.soon.clear()
        sockets = dict(watch.sockets)
        if not sockets:
            return
        try:
            failed = await database_sync_to_async(revoked)(set(sockets.values()))
        except Exception:  # noqa: BLE001 - a database hiccup: the next period checks again
            log.warning("checking the live sockets' sessions failed", exc_info=True)
            continue
        for consumer, ticket in sockets.items():
            if ticket in failed and watch.sockets.pop(consumer, None) is not None:
                try:
                    await consumer.revoke()
                except Exception:  # noqa: BLE001 - one socket's failure must not spare the others
                    log.warning("closing a socket whose session ended failed", exc_info=True)
