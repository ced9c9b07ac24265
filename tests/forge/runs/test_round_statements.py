"""The statements a round costs, pinned: the cost per step is a headline figure of the runtime.

This file runs on SQLite here and on PostgreSQL in
tests/cluster/test_console_on_postgres.py, each against its own figures.
On PostgreSQL every statement the server executes is counted (libpq's
protocol trace), the runtime's own SQL included, and so are round trips.
A change that adds a statement to a round must change these figures on
purpose.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from psycopg import pq

from engine.executors import StepResult as Result
from forge.governance.models import Agent
from forge.runs import services
from forge.runtime.completion import Completion
from forge.runtime.execution import claim_attempt
from forge.runtime.rounds import advance

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# statements (and, on PostgreSQL, round trips) of each measured piece of work
EXPECTED = {
    "sqlite": {"inline_step": (10, None), "claim": (6, None), "completion": (14, None)},
    "postgresql": {"inline_step": (10, 3), "claim": (6, 6), "completion": (14, 3)},
}


@dataclass
class Count:
    statements: int = 0
    round_trips: int = 0


@contextlib.contextmanager
def counting():
    """Statements executed (and round trips to the server) inside the block."""
    count = Count()
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        pgconn = connection.connection.pgconn
        with tempfile.TemporaryFile(mode="w+") as trace:
            pgconn.trace(trace.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            try:
                yield count
            finally:
                pgconn.untrace()
            trace.seek(0)
            for line in trace:
                direction, _, message = line.split("\t")[:3]
                message = message.strip()
                count.statements += direction == "F" and message in ("Execute", "Query")
                count.round_trips += direction == "B" and message == "ReadyForQuery"
    else:
        with CaptureQueriesContext(connection) as queries:
            yield count
        count.statements = count.round_trips = len(queries)


def chain(length: int, agent: str) -> str:
    steps = "".join(f"  - {{id: s{i}, agent: {agent}, command: forge.runs.callables.noop"
                    + (f", depends_on: [s{i - 1}]" if i else "") + "}\n" for i in range(length))
    return f"name: chain_{agent}_{length}\nsteps:\n{steps}"


def started(operator, save_workflow, source: str):
    """A run whose start waits in its inbox (nothing advanced it yet)."""
    with mock.patch("forge.runs.services.enqueue_advance"):
        return services.run_start(user=operator, version=save_workflow(source))


def pinned(name: str, count: Count) -> None:
    expected = EXPECTED[connection.vendor][name]
    measured = (count.statements, count.round_trips if connection.vendor == "postgresql" else None)
    assert measured == expected, f"{name}: measured {measured}, pinned {expected}"


@pytest.fixture
def inline_agent(db):
    return Agent.objects.create(name="py", provider="python", config={})


@pytest.fixture
def queued_agent(db):
    return Agent.objects.create(name="queued_py", provider="python", config={"inline": False})


def test_an_inline_step_costs_the_same_statements_wherever_it_is_in_a_chain(operator, save_workflow, inline_agent):
    counts = {}
    for length in (2, 4):
        run = started(operator, save_workflow, chain(length, "py"))
        with counting() as counts[length]:
            advance(run.pk)
        run.refresh_from_db()
        assert run.status == "completed"
    per_step = Count(*(  # the two extra steps of the longer chain
        (getattr(counts[4], f) - getattr(counts[2], f)) // 2 for f in ("statements", "round_trips")))
    pinned("inline_step", per_step)


def test_a_queued_steps_claim_and_completion_cost_what_is_pinned(operator, save_workflow, queued_agent):
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = started(operator, save_workflow, chain(3, "queued_py"))
        advance(run.pk)
        (task,) = [c.args for c in enqueue.call_args_list]
        advance(run.pk)  # nothing due: the first step waits for its worker
        with counting() as claim:
            claimed = claim_attempt(*task)
        assert claimed is not None
        pinned("claim", claim)
        done = Completion(run.pk, claimed.step, claimed.attempt, claimed.iteration, Result(ok=True, outputs={}),
                          fence=claimed.fence)
        with counting() as completion:
            advance(run.pk, done)  # records the result, feeds it and dispatches the next step
        assert len(enqueue.call_args_list) == 2
    pinned("completion", completion)
