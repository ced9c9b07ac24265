"""A cancel or a timeout while the worker's POST to a gateway is still in flight (spec 15, cancel_url).

The round that ends the attempt sees a worker holding it, not a gateway, so it tells nobody; the gateway may take
the attempt all the same. The fake gateway (tests/forge/runtime/test_gateway_routing.py) holds its answer at a
barrier until the test has ended the attempt. The worker runs in a thread of its own, so the database is
transactional: the test and the worker see each other's commits.
"""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection, transaction
from django.db.models import F

from forge.runs.models import Run, StepResult
from forge.runs import services
from forge.runtime import leases
from forge.runtime.execution import execute_step
from tests.fake_gateway import WORKFLOW, FakeGateway
from tests.forge.conftest import fast_forward
from tests.forge.runtime.test_gateway_routing import contacts, register, work
from tests.forge.runtime.test_gateway_routing import gateways  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

DEADLINE_S = 30


class InFlight:
    """The run's attempt sent by a worker thread to a gateway whose 202 waits until `answer()`."""

    def __init__(self, fake: FakeGateway, run: Run, task_args: tuple):
        self.fake, self.run = fake, run
        self.arrived, self.release = threading.Event(), threading.Event()
        self.outcome: list[str] = []
        fake.reply = self._held
        self.thread = threading.Thread(target=self._work, args=task_args, daemon=True)
        self.thread.start()
        assert self.arrived.wait(DEADLINE_S), "the dispatch never reached the gateway"

    def _held(self, body):
        self.arrived.set()
        self.release.wait(DEADLINE_S)
        return 202, {"accepted": True}

    def _work(self, *args):
        try:
            self.outcome.append(execute_step(*args))
        finally:
            connection.close()

    def answer(self) -> str:
        self.release.set()
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), "the worker did not finish"
        return self.outcome[0]

    def cancels(self) -> list[dict]:
        return [body for method, path, _, body in self.fake.seen if (method, path) == ("POST", "/cancel")]


@pytest.fixture
def in_flight(operator, save_workflow, gateways, monkeypatch):  # noqa: F811
    """Start the run with its dispatch queued, then send it from a worker thread; its lease is not renewed here
    (the renewer would abandon the POST when it sees the new fence: see the last test), so the 202 comes back."""
    east, _ = gateways
    register(east, cancel=True)
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(WORKFLOW))
    assert work(run).status == "running"
    monkeypatch.setattr(leases, "hold", lambda held: None)
    yield InFlight(east, run, enqueue.call_args.args)


def end(how: str, run: Run, operator) -> Run:
    if how == "cancel":
        services.run_cancel(user=operator, run=run)
    else:
        fast_forward(run)  # the step's timeout falls due
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("how, reason", [("cancel", "run_cancelled"), ("timeout", "timeout")])
def test_a_gateway_that_takes_an_attempt_ended_while_it_was_sent_is_told_at_its_cancel_url(
        in_flight, operator, how, reason):
    run = end(how, in_flight.run, operator)
    assert run.status == ("cancelled" if how == "cancel" else "failed")
    assert in_flight.cancels() == []  # nothing had taken the attempt yet, as far as the run knew

    in_flight.answer()

    (cancel,) = in_flight.cancels()
    assert cancel == {"run_id": str(run.pk), "step": "work", "attempt": 1, "iteration": 0, "reason": reason}
    assert contacts(run) == [("east", "accepted"), ("east", "cancel_sent")]
    assert work(run).lease_owner != "gateway"  # the ended attempt is not held for a callback


def test_an_attempt_taken_over_while_it_was_sent_is_not_cancelled_at_the_gateway(in_flight):
    """Another worker took the attempt over (a new fence, the attempt still running) and sends it again under the
    same run, step, attempt and iteration: a cancel would stop that one too."""
    with transaction.atomic():
        Run.objects.filter(pk=in_flight.run.pk).update(fences=F("fences") + 1)
        StepResult.objects.filter(pk=work(in_flight.run).pk).update(fence=F("fence") + 1)

    assert in_flight.answer() == "deferred"

    assert in_flight.cancels() == []
    row = work(in_flight.run)
    assert (row.status, row.attempt) == ("running", 1) and row.lease_owner != "gateway"
    assert contacts(in_flight.run) == [("east", "accepted")]


def test_a_post_abandoned_when_its_attempt_was_cancelled_tells_the_gateway_too(
        operator, save_workflow, gateways, settings):  # noqa: F811
    """With its lease renewed, the worker sees the new fence and abandons the POST before any answer: the gateway
    may have the attempt all the same, and is told."""
    settings.FORGE_LEASE_S = 3  # renewed every second
    east, _ = gateways
    register(east, cancel=True)
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(WORKFLOW))
    flight = InFlight(east, run, enqueue.call_args.args)

    run = end("cancel", run, operator)
    flight.thread.join(DEADLINE_S)  # the gateway still holds its answer: only the abandon ends the worker
    assert not flight.thread.is_alive(), "the worker did not abandon the POST"
    flight.release.set()

    (cancel,) = flight.cancels()
    assert (cancel["attempt"], cancel["reason"]) == (1, "run_cancelled")
    assert contacts(run) == [("east", "cancel_sent")]
