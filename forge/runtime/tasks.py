"""The django-q2 tasks: thin functions that take ids and call the runtime. Queued by name (see `queue`);
nothing imports this module."""

from __future__ import annotations

from forge.runtime import recovery
from forge.runtime.execution import execute_step
from forge.runtime.rounds import advance

__all__ = ["advance_run", "execute_step", "recover"]


def advance_run(run_id: int) -> None:
    advance(run_id)


def recover() -> dict[str, int]:
    return recovery.recover()
