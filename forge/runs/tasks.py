"""The django-q2 tasks: thin functions that take ids and call the runtime."""

from __future__ import annotations

import os

from django_q.brokers import get_broker
from django_q.tasks import async_task

from forge.runs import recovery
from forge.runs.execution import execute_step
from forge.runs.runtime import advance

__all__ = ["advance_run", "execute_step", "recover", "enqueue", "enqueue_advance"]
_brokers: dict[int, object] = {}


def advance_run(run_id: int) -> None:
    advance(run_id)


def recover() -> dict[str, int]:
    return recovery.recover()


def enqueue(func: str, *args, task_name: str, broker=None) -> None:
    """Queue a task on this process's broker (django-q2 would open a new Redis connection per task)."""
    if broker is None:
        pid = os.getpid()  # a forked worker must not share its parent's socket
        broker = _brokers.get(pid) or _brokers.setdefault(pid, get_broker())
    async_task(func, *args, task_name=task_name[:100], broker=broker)


def enqueue_advance(run_id: int, *, broker=None) -> None:
    enqueue("forge.runs.tasks.advance_run", run_id, task_name=f"advance run {run_id}", broker=broker)
