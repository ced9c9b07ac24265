"""The django-q2 tasks: thin functions that take ids and call the runtime. Queued by name (see `queue`);
nothing imports this module."""

from __future__ import annotations

from forge.runtime import gateways, probe, recovery
from forge.runtime.execution import execute_step
from forge.runtime.rounds import advance
from forge.schedules.firing import fire_due_schedules

__all__ = ["advance_run", "cancel_at_gateway", "execute_step", "fire_schedules", "probe_gateways", "recover"]


def advance_run(run_id: int) -> None:
    advance(run_id)


def recover() -> dict[str, int]:
    return recovery.recover()


def fire_schedules() -> dict[str, int]:
    return fire_due_schedules()


def probe_gateways() -> dict[str, int]:
    return probe.probe_gateways()


def cancel_at_gateway(run_id: int, step: str, attempt: int, iteration: int, agent: str, gateway: str,
                      reason: str) -> str:
    return gateways.tell_cancel(run_id, step, attempt, iteration, agent, gateway, reason)
