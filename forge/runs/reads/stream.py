"""What the live stream reads: who may watch a run, its events after an id, and a snapshot from rows when
the backlog is too long to replay."""

from __future__ import annotations

from json import dumps
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast

from engine.interpreter.state import RunStatus
from forge.accounts.roles import can
from forge.runs.reads.run_view import run_view
from forge.runs.models import Run, RunEvent
from forge.runs.selectors import runs_for_user

CHUNK = 1000  # events a message carries: fewer reads of a long backlog, still far below what a frame holds
INPUT = "input"  # RunEvent.kind of what the interpreter was fed (forge.runtime.bridge.INPUT)
FORBIDDEN, MISSING = "forbidden", "missing"


def may_watch(user, run_id: int) -> str | None:
    """None when `user` may watch the run; else FORBIDDEN or MISSING (told only to those who may see runs)."""
    if user is None or not user.is_authenticated:
        return FORBIDDEN
    if runs_for_user(user).filter(pk=run_id).exists():
        return None
    return MISSING if can(user, "run.view") else FORBIDDEN


def events_frame(run_id: int, after: int) -> tuple[str, int, int] | None:
    """The `events` message of the run's events after `after` (at most CHUNK) as the text sent, its last id and
    its count; None when none came."""
    found = event_texts(run_id, after)
    if not found:
        return None
    return ('{"type": "events", "events": [' + ", ".join(text for _, _, text in found) + "]}", found[-1][0],
            len(found))


def event_texts(run_id: int, after: int, limit: int = CHUNK) -> list[tuple[int, str, str]]:
    """The run's events after `after` (at most `limit`), in id order, each as its id, its kind and its JSON text
    on one line (`{"id", "kind", "step", "data", "at"}`): the socket's messages and the API's events are made of
    these. Each event's data goes as the database keeps it (JSON text), never parsed and encoded again, and its
    time without Django's per-row conversion: those were most of what a burst of step events cost the server.
    The interpreter's inputs are not sent: no part of the page shows them (a step's outputs and stdout are its
    panel's)."""
    # The chunk's ids first, its text after: a planner that sorts the run's remaining events would otherwise
    # turn every one of them into text on each read of a long backlog.
    chunk = (RunEvent.objects.filter(run_id=run_id, id__gt=after).exclude(kind=INPUT).order_by("id")
             .values("id")[:limit])
    rows = (RunEvent.objects.filter(id__in=chunk).order_by("id")
            .annotate(text=Cast("data", TextField()), at_text=Cast("at", TextField()))
            .values_list("id", "kind", "step", "text", "at_text"))
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    names: dict[str, str] = {}  # kinds and step ids repeat across a burst: each encoded once
    return [(i, kind, f'{{"id": {i}, "kind": {_name(names, kind)}, "step": {_name(names, step)}, '
                      f'"data": {_one_line(text)}, "at": "{_iso(at)}"}}') for i, kind, step, text, at in found]


def run_ended(run_id: int) -> bool:
    """Whether the run has ended: read before its events, it says that the events read next include its last."""
    return Run.objects.filter(pk=run_id, status__in=RunStatus.TERMINAL).exists()


def _one_line(text: str) -> str:
    """JSON text as one line: a line break can only be whitespace between tokens (in a string it is escaped)."""
    return text.replace("\r", " ").replace("\n", " ") if "\n" in text or "\r" in text else text


def _name(names: dict[str, str], value: str) -> str:
    if (said := names.get(value)) is None:
        said = names[value] = dumps(value)
    return said


def _iso(at: str) -> str:
    """A stored time, read as text (the drivers' own conversion was most of a burst's cost on PostgreSQL), as the
    aware datetime's isoformat(): SQLite keeps 'YYYY-MM-DD HH:MM:SS[.ffffff]' in UTC, PostgreSQL says the same with
    '+00' (the connection's zone is UTC) and its fraction without trailing zeros."""
    at = at.replace(" ", "T", 1).removesuffix("+00:00").removesuffix("+00")
    if "." in at:
        whole, fraction = at.split(".")
        at = f"{whole}.{fraction.ljust(6, '0')}"
    return at + "+00:00"


def snapshot_if_too_far(run_id: int, after: int) -> dict[str, Any] | None:
    """A snapshot of the run's rows when more than FORGE_LIVE_REPLAY_MAX events came after `after`."""
    backlog = (RunEvent.objects.filter(run_id=run_id, id__gt=after).exclude(kind=INPUT).order_by("id")
               [:settings.FORGE_LIVE_REPLAY_MAX + 1])
    if backlog.count() <= settings.FORGE_LIVE_REPLAY_MAX:
        return None
    # run_view reads the last id first, the rows after: an event committed in between is sent again and sets
    # the same values. Each step carries what its events carry (the table's fields and its sentence).
    view = run_view(Run.objects.select_related("version").get(pk=run_id))
    run = view.run
    return {"type": "snapshot", "last_id": view.last_event_id,
            "run": {"status": run.status, "error": run.error, "error_code": run.error_code},
            "steps": {node.id: node.live_fields() for node in view.nodes}}
