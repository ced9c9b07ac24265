"""The queue client: how the runtime and the services hand work to the cluster (django-q2)."""

from __future__ import annotations

import os

from django_q.brokers import get_broker
from django_q.tasks import async_task

# The dotted paths of the task entry points (forge/runtime/tasks.py): tasks are queued by name.
ADVANCE_RUN = "forge.runtime.tasks.advance_run"
EXECUTE_STEP = "forge.runtime.tasks.execute_step"
RECOVER = "forge.runtime.tasks.recover"
FIRE_SCHEDULES = "forge.runtime.tasks.fire_schedules"
PROBE_GATEWAYS = "forge.runtime.tasks.probe_gateways"
CANCEL_AT_GATEWAY = "forge.runtime.tasks.cancel_at_gateway"

_brokers: dict[int, object] = {}


def enqueue(func: str, *args, task_name: str, broker=None) -> None:
    """Queue a task on this process's broker (django-q2 would open a new Redis connection per task)."""
    if broker is None:
        pid = os.getpid()  # a forked worker must not share its parent's socket
        broker = _brokers.get(pid) or _brokers.setdefault(pid, get_broker())
    async_task(func, *args, task_name=task_name[:100], broker=broker)


def enqueue_advance(run_id: int, *, broker=None) -> None:
    enqueue(ADVANCE_RUN, run_id, task_name=f"advance run {run_id}", broker=broker)


def enqueue_execution(run_id: int, step: str, attempt: int, fence: int, *, resume: bool = False, broker=None) -> None:
    enqueue(EXECUTE_STEP, run_id, step, attempt, fence, resume, task_name=f"run {run_id} {step}#{attempt}",
            broker=broker)
