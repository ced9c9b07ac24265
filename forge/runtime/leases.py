"""Who holds a step attempt, and the thread that keeps its lease alive while it runs.

This module owns the attempt's lease (StepResult `fence`, `lease_owner`,
`lease_expires_at`, `executing`): every transition of it is a function
here, so what a state means is written once.

A lease owner names one worker process: host, pid and a nonce made in that
process the first time it asks. django-q2 forks its workers after Forge is
imported, so a name made at import would be the parent's, the same for
every worker.

Each process has one renewing thread. Whatever holds attempts (a queued
step in `execute_step`, the inline python calls of a round) registers their
leases; the thread extends them every renewal period while they are held,
and sets a lease's `cancel` when its attempt changed hands (a new fence:
cancel, timeout, takeover) or ended, and a queued step's when the cluster
is stopping (forge.runtime.stopping).
"""

from __future__ import annotations

import enum
import functools
import logging
import operator
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from engine.interpreter.state import StepStatus
from forge.runs.models import StepResult
from forge.runtime import stopping, store

log = logging.getLogger(__name__)

_CHUNK = 100  # leases renewed per statement


class Owner(enum.StrEnum):
    """`lease_owner`: who holds an attempt. Any other value names the worker process executing it."""

    NOBODY = ""         # not running, or handed to the queue and not claimed yet
    INBOX = "inbox"     # its result waits in the run's inbox
    GATEWAY = "gateway" # a gateway accepted it (202) and will call back
    RETRY = "retry"     # no gateway could be connected to: the clock queues it again at lease_expires_at


# -- transitions written by a round (fields for its batched step write) --------------------------------

def queued(fence: int, now) -> dict:
    """Handed to the queue: a worker must claim it before the lease runs out, or the reaper sends it again."""
    return {"fence": fence, "executing": False, "lease_owner": Owner.NOBODY, "lease_expires_at": lease_until(now)}


def inline(fence: int, now) -> dict:
    """Run by the advancing worker itself right after the round commits (see rounds.advance)."""
    return {"fence": fence, "executing": True, "lease_owner": worker(), "lease_expires_at": lease_until(now)}


def in_inbox(fence: int) -> dict:
    """Its result is known already (the mock agent) and waits in the inbox: nobody must run it."""
    return {"fence": fence, "executing": False, "lease_owner": Owner.INBOX, "lease_expires_at": None}


def revoked(fence: int) -> dict:
    """Cancelled or timed out: a new fence stops its worker at the next renewal and makes its result stale."""
    return {"fence": fence, "executing": False, "lease_owner": Owner.NOBODY, "lease_expires_at": None}


ENDED = {"executing": False, "lease_owner": Owner.NOBODY, "lease_expires_at": None}  # the step is not running


# -- transitions outside a round --------------------------------------------------------------------

def claim(row_id: int, fence: int, now) -> None:
    """This worker executes the attempt (the caller holds the run's lock and checked it may)."""
    store.update(StepResult, {"executing": True, "lease_owner": worker(), "fence": fence,
                              "lease_expires_at": lease_until(now)}, id=row_id)


def deferred(row_id: int, fence: int) -> bool:
    """A gateway took the attempt and will call back; the timeout enforcer watches its deadline. False: the attempt
    was no longer this worker's when the gateway's 202 came (cancelled, timed out or taken over meanwhile: a new
    fence, or its result recorded by the timeout enforcer), and nothing was written."""
    return bool(StepResult.objects.filter(pk=row_id, fence=fence, lease_owner=worker(), status=StepStatus.RUNNING)
                .update(executing=False, lease_owner=Owner.GATEWAY))


def retry_at(row_id: int, fence: int, due) -> None:
    """Every covering gateway refused the connection: nobody holds the attempt until `due`, when the clock queues
    it again (forge.runtime.gateways). The caller released its lease, so no renewal moves `due`."""
    StepResult.objects.filter(pk=row_id, fence=fence).update(executing=False, lease_owner=Owner.RETRY,
                                                             lease_expires_at=due)


def retry_due(row_id: int, fence: int, now) -> bool:
    """The clock takes a due retry: queued like a new dispatch (False: another cluster's clock took it, or the
    attempt was cancelled meanwhile)."""
    return bool(StepResult.objects.filter(pk=row_id, fence=fence, lease_owner=Owner.RETRY,
                                          status=StepStatus.RUNNING).update(**queued(fence, now)))


def handed_back(row_id: int, fence: int) -> None:
    """The cluster stopped this worker's attempt (a queued step): nobody holds it and its lease has run out, so
    the reaper sends it again at once, and the claim counts no crash (`executing` is off)."""
    StepResult.objects.filter(pk=row_id, fence=fence, lease_owner=worker()).update(
        executing=False, lease_owner=Owner.NOBODY, lease_expires_at=timezone.now())


def result_recorded(run_id: int, step: str) -> None:
    """The attempt's result is in the inbox (the caller holds the run's lock): nobody runs it again."""
    StepResult.objects.filter(run_id=run_id, step=step).update(executing=False, lease_expires_at=None,
                                                               lease_owner=Owner.INBOX)


_name: tuple[int, str] | None = None


def worker() -> str:
    """This process's name as a lease owner (`host:pid:nonce`)."""
    global _name
    pid = os.getpid()
    if _name is None or _name[0] != pid:
        _name = (pid, f"{socket.gethostname()[:64]}:{pid}:{secrets.token_hex(4)}")
    return _name[1]


def lease_until(now):
    return now + timedelta(seconds=settings.FORGE_LEASE_S)


def renew_every() -> float:
    """A held lease is extended this often, so it always has two thirds of its length or more to run."""
    return min(1.0, settings.FORGE_LEASE_S / 3)


@dataclass(eq=False)
class Lease:
    """One attempt this process holds: its row is found by run, step and the fence it was handed."""

    run_id: int
    step: str
    fence: int
    cancel: threading.Event = field(default_factory=threading.Event)
    stops_with_cluster: bool = False  # a queued step's: cancelled when the cluster stops, to be handed back


class _Renewer(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True, name="forge lease renewer")
        self.held: set[Lease] = set()
        self.lock = threading.Lock()
        self.idle = threading.Event()  # set when the last lease is released: drop the connection at once

    def run(self) -> None:
        while True:
            self.idle.wait(renew_every())
            self.idle.clear()
            with self.lock:
                leases = [lease for lease in self.held if not lease.cancel.is_set()]
            if stopping.requested():
                for lease in leases:
                    if lease.stops_with_cluster:
                        lease.cancel.set()
                leases = [lease for lease in leases if not lease.cancel.is_set()]
            try:
                if leases:
                    renew(leases)
                else:
                    connection.close()  # hold no connection while idle (a test database is dropped at the end)
            except Exception:  # noqa: BLE001 - a failed renewal is retried next period; the lease has time left
                log.exception("renewing %d leases failed", len(leases))
                connection.close()


_renewer: _Renewer | None = None
_start_lock = threading.Lock()


def _reset_after_fork() -> None:
    global _renewer, _start_lock
    _renewer, _start_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_reset_after_fork)


def hold(leases: list[Lease]) -> None:
    """Keep these leases alive until `release`."""
    global _renewer
    if not leases:
        return
    with _start_lock:
        if _renewer is None:
            _renewer = _Renewer()
            _renewer.start()
        renewer = _renewer
    with renewer.lock:
        renewer.held.update(leases)


def release(leases: list[Lease]) -> None:
    renewer = _renewer
    if renewer is not None and leases:
        with renewer.lock:
            renewer.held.difference_update(leases)
            if not renewer.held:
                renewer.idle.set()


def renew(leases: list[Lease]) -> None:
    """Extend the leases whose attempt is still running under their fence; cancel the others."""
    until = lease_until(timezone.now())
    for start in range(0, len(leases), _CHUNK):
        chunk = leases[start:start + _CHUNK]
        mine = functools.reduce(operator.or_, (Q(run_id=lease.run_id, step=lease.step, fence=lease.fence)
                                               for lease in chunk))
        rows = StepResult.objects.filter(mine, status=StepStatus.RUNNING)
        if rows.update(lease_expires_at=until) == len(chunk):
            continue
        current = set(rows.values_list("run_id", "step", "fence"))
        for lease in chunk:
            if (lease.run_id, lease.step, lease.fence) not in current:
                lease.cancel.set()
