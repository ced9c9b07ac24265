"""Schedules on a moved clock: every test passes `now` to the services and to fire_due_schedules, never sleeps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from forge.schedules import services

REPORT = """
name: nightly_report
args:
  region: {type: string, required: true}
  copies: {type: integer, default: 1}
steps:
  - id: build
    agent: mock
    command: "build the report for ${args.region}"
    mock: {outputs: {done: true}}
"""

# Stays in flight until a person decides: what overlap needs.
SIGN_OFF = """
name: needs_sign_off
steps:
  - id: prepare
    agent: mock
    command: prepare
    mock: {outputs: {ready: true}}
  - id: sign_off
    approval: required
    depends_on: [prepare]
"""


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


# A Monday in winter; 10:00:30, so a '*/10' schedule added now first falls due at 10:10.
MONDAY = utc(2030, 1, 14, 10, 0, 30)


@pytest.fixture
def report(save_workflow):
    return save_workflow(REPORT).workflow


@pytest.fixture
def sign_off(save_workflow):
    return save_workflow(SIGN_OFF).workflow


@pytest.fixture
def add_schedule(operator):
    """Add a schedule as the operator at MONDAY (or `now`), every ten minutes unless told otherwise."""
    def add(workflow, *, cron="*/10 * * * *", now=MONDAY, user=operator, **more):
        more.setdefault("args", {"region": "eu"} if workflow.name == "nightly_report" else {})
        return services.schedule_add(user=user, workflow=workflow, cron=cron, now=now, **more)
    return add
