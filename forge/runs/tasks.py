"""The django-q2 tasks: thin functions that take ids and call the runtime."""

from __future__ import annotations

from django_q.tasks import async_task

from forge.runs import recovery
from forge.runs.execution import execute_step
from forge.runs.runtime import advance

__all__ = ["advance_run", "execute_step", "recover", "enqueue_advance"]


def advance_run(run_id: int) -> None:
    advance(run_id)


def recover() -> dict[str, int]:
    return recovery.recover()


def enqueue_advance(run_id: int, *, broker=None) -> None:
    options = {"broker": broker} if broker is not None else {}
    async_task("forge.runs.tasks.advance_run", run_id, task_name=f"advance run {run_id}", **options)
