"""The django-q2 tasks: thin functions that take ids and call the runtime. Queued by name (see `queue`);
nothing imports this module."""

from __future__ import annotations

from forge.runtime import recovery
from forge.runtime.execution import execute_step
from forge.runtime.rounds import advance
from forge.schedules.firing import fire_due_schedules

__all__ = ["advance_run", "execute_step", "fire_schedules", "recover"]


def advance_run(run_id: int) -> None:
    advance(run_id)


def recover() -> dict[str, int]:
    return recovery.recover()


def fire_schedules() -> dict[str, int]:
    return fire_due_schedules()
