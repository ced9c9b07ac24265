"""Wake-ups for the console's live views, sent after a round commits.

A wake-up carries no data: it tells the consumers of a run's page (group `run-<id>`), of the approvals inbox
and badge (group `approvals`) and of the runs lists (group `runs`) to read what is new from the database,
which stays the only truth. channels_redis drops messages over its capacity, and the in-memory layer of the
embedded default does not cross from the cluster's processes to daphne's, so consumers also poll
(FORGE_LIVE_POLL_S): a wake-up only makes them sooner.

Sending costs milliseconds (an event loop and Redis round trips), so a round only notes the group; one
thread per process sends what was noted, once per group however many rounds noted it meanwhile, and at most
once every SEND_GAP_S, so a busy worker's rounds cost Redis 20 sends a second, not one each.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
import time

from channels.layers import get_channel_layer
from django.conf import settings

log = logging.getLogger(__name__)
SEND_GAP_S = 0.05  # well inside the live view's 100 ms target with Redis
APPROVALS, RUNS = "approvals", "runs"  # the groups of the inbox and badge, and of the runs lists

_lock = threading.Lock()
_noted: set[str] = set()
_ready = threading.Event()
_sender: tuple[int, threading.Thread] | None = None  # (pid, thread): a forked worker starts its own


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def user_group(user_id: int) -> str:
    """Every live socket of one person (forge/console/session_signals.py tells them to check their session)."""
    return f"user-{user_id}"


def session_digest(session_key: str) -> str:
    """Names a session in a message without copying its key, a credential, into the channel layer."""
    return hashlib.sha256(session_key.encode()).hexdigest()


def wake(run_id: int, *, approvals: bool = False, runs: bool = False) -> None:
    """Tell the run's live views to look again; the approvals inbox too when an approval changed, and the runs
    lists when the run's status did."""
    if not settings.REDIS_URL:
        return  # the in-memory layer reaches no other process: the consumers' poll is what updates them
    global _sender
    with _lock:
        _noted.add(run_group(run_id))
        if approvals:
            _noted.add(APPROVALS)
        if runs:
            _noted.add(RUNS)
        if _sender is None or _sender[0] != os.getpid() or not _sender[1].is_alive():
            thread = threading.Thread(target=_send_forever, name="forge-live-wake", daemon=True)
            _sender = (os.getpid(), thread)
            thread.start()
    _ready.set()


def _send_forever() -> None:
    loop = asyncio.new_event_loop()
    while True:
        _ready.wait()
        with _lock:
            _ready.clear()
            groups = sorted(_noted)
            _noted.clear()
        layer = get_channel_layer()
        for group in groups:
            try:
                loop.run_until_complete(layer.group_send(group, {"type": "wake"}))
            except Exception:  # noqa: BLE001 - a lost wake-up costs one poll interval, never a round
                log.warning("could not wake the live views of %s", group, exc_info=True)
        time.sleep(SEND_GAP_S)
