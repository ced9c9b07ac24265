"""What the live stream reads: who may watch a run, its events after an id, and a snapshot from rows when
the backlog is too long to replay."""

from __future__ import annotations

from datetime import datetime
from json import dumps
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast

from forge.accounts.roles import can
from forge.console.run_view import run_view
from forge.runs.models import Run, RunEvent
from forge.runs.selectors import runs_for_user

CHUNK = 500
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
    its count; None when none came. Each event's data goes as the database keeps it (JSON text), never parsed
    and encoded again, and its time without Django's per-row conversion: those were most of what a burst of
    step events cost the server. The interpreter's inputs are not sent: no part of the page shows them (a
    step's outputs and stdout are its panel's)."""
    rows = (RunEvent.objects.filter(run_id=run_id, id__gt=after).exclude(kind=INPUT).order_by("id")
            .annotate(text=Cast("data", TextField())).values_list("id", "kind", "step", "text", "at")[:CHUNK])
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    if not found:
        return None
    said = ", ".join(f'{{"id": {i}, "kind": {dumps(kind)}, "step": {dumps(step)}, "data": {text}, "at": "{_iso(at)}"}}'
                     for i, kind, step, text, at in found)
    return '{"type": "events", "events": [' + said + "]}", found[-1][0], len(found)


def _iso(at) -> str:
    """A stored time as the aware datetime's isoformat(): the drivers give it aware (PostgreSQL) or naive in
    UTC (SQLite), or as the text Django stored (UTC, 'YYYY-MM-DD HH:MM:SS[.ffffff]')."""
    if isinstance(at, str):
        return at.replace(" ", "T", 1) + "+00:00"
    return at.isoformat() if at.tzinfo is not None else at.isoformat() + "+00:00"


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
