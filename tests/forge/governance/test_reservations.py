"""Reservations: a dispatch holds its projected cost against budgets until its result settles it.

Queued steps (an openai agent) are captured instead of executed, so a step
stays in flight until the test plays its worker and reports a result.
"""

from datetime import timedelta
from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from engine.executors import StepResult as Result
from forge.audit.models import AuditEvent
from forge.governance.context import forget_configuration
from forge.governance.models import Agent, BudgetEnvelope, TokenEvent
from forge.runs import services
from forge.runtime.agents import AgentMisconfigured, executor_for
from forge.runtime.completion import Completion, Outcome, complete_step
from forge.runs.models import RunEvent, StepResult
from forge.runtime.recovery import fail_crash_loop, recover
from forge.runtime.rounds import advance
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# gpt-4o's list price is 2.50 / 10.00 USD per million tokens: 10,000 tokens cost at most 0.10.
WRITER = {"model": "gpt-4o", "max_tokens": 10_000}
BOUND = 0.10


def one_step(name: str, agent: str = "writer", extra: str = "") -> str:
    return f"""
name: {name}
steps:
  - id: work
    agent: {agent}
    command: write the summary
{extra}"""


@pytest.fixture
def queue():
    """Captured execute_step tasks: (run_id, step, attempt, fence) each."""
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        yield enqueue


@pytest.fixture
def writer(db):
    return Agent.objects.create(name="writer", provider="openai", config=dict(WRITER))


def start(operator, save_workflow, source):
    run = services.run_start(user=operator, version=save_workflow(source))
    run.refresh_from_db()
    return run


def work(run) -> StepResult:
    return StepResult.objects.get(run=run, step="work")


def report(run, fence, *, cost: float, tokens: int = 1000):
    """Play the worker: the attempt's result arrives and is fed."""
    return advance(run.pk, Completion(run.pk, "work", 1, 0, Result(ok=True, outputs={}, stdout="done",
                                                                   tokens=tokens, cost=cost), fence=fence))


def held(**where) -> float:
    return sum(TokenEvent.objects.filter(**where).values_list("reserved", flat=True))


def spent(**where) -> float:
    return sum(TokenEvent.objects.filter(**where).values_list("cost", flat=True))


class TestReservingAtDispatch:
    def test_an_openai_dispatch_reserves_its_price_bound_so_a_second_is_blocked_before_the_first_ends(
            self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        second = start(operator, save_workflow, one_step("second"))
        assert work(first).status == "running"
        assert (work(second).status, work(second).error_code) == ("failed", "budget_exceeded")
        assert "0.10 reserved by steps in flight" in work(second).error
        assert queue.call_count == 1
        assert held(run_id=first.pk) == pytest.approx(BOUND)

    def test_the_result_settles_the_reservation_to_the_real_cost_and_frees_the_difference(
            self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        assert report(first, queue.call_args.args[3], cost=0.02) is Outcome.ACCEPTED
        first.refresh_from_db()
        assert first.status == "completed"
        second = start(operator, save_workflow, one_step("second"))  # 0.02 spent + 0.10 reserved fits 0.15
        assert work(second).status == "running"
        third = start(operator, save_workflow, one_step("third"))
        assert work(third).error_code == "budget_exceeded"
        row = TokenEvent.objects.get(run_id=first.pk)
        assert (row.cost, row.reserved, row.settled, row.tokens) == (0.02, 0.0, True, 1000)

    def test_an_admin_sees_the_open_reservation_on_the_spend_page(self, operator, save_workflow, writer, queue,
                                                                   client):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        run = start(operator, save_workflow, one_step("watched"))
        client.force_login(User.objects.create_superuser("root", password="x"))
        page = client.get(reverse("admin:forge_governance_tokenevent_changelist") + "?settled__exact=0")
        assert page.status_code == 200
        text = page.content.decode()
        assert "Reserved" in text and "0.1" in text and f">{run.pk}<" in text

    def test_the_agents_monthly_budget_counts_reservations_too(self, operator, save_workflow, queue):
        Agent.objects.create(name="writer", provider="openai", config=dict(WRITER), monthly_budget=0.15)
        start(operator, save_workflow, one_step("first"))
        second = start(operator, save_workflow, one_step("second"))
        assert work(second).error_code == "budget_exceeded"
        assert "monthly budget of 0.15" in work(second).error

    def test_an_unbudgeted_dispatch_reserves_nothing(self, operator, save_workflow, writer, queue):
        run = start(operator, save_workflow, one_step("free"))
        assert work(run).status == "running"
        assert not TokenEvent.objects.exists()

    def test_the_projection_is_recorded_with_the_governance_decision(self, operator, save_workflow, writer, queue):
        run = start(operator, save_workflow, one_step("logged"))
        decision = RunEvent.objects.get(run=run, kind="governance")
        assert (decision.data["outcome"], decision.data["estimated_cost"]) == ("allow", pytest.approx(BOUND))


class TestProjection:
    def test_a_mock_steps_cost_is_reserved_so_the_envelope_is_not_overspent(self, operator, save_workflow):
        BudgetEnvelope.objects.create(name="demo", scope="workflow:priced", limit=0.3)
        priced = one_step("priced", "mock", "    mock: {outputs: {}, cost: 0.25}\n")
        assert fast_forward(start(operator, save_workflow, priced)).status == "completed"
        again = fast_forward(start(operator, save_workflow, priced))
        assert (again.status, work(again).error_code) == ("failed", "budget_exceeded")
        assert spent(workflow="priced") == 0.25

    def test_a_steps_declared_estimated_cost_raises_the_projection(self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=1.0)
        run = start(operator, save_workflow, one_step("big", extra="    estimated_cost: 0.75\n"))
        assert held(run_id=run.pk) == 0.75
        second = start(operator, save_workflow, one_step("big_again", extra="    estimated_cost: 0.75\n"))
        assert work(second).error_code == "budget_exceeded"

    def test_a_steps_declared_estimated_cost_cannot_lower_the_agents_projection(
            self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=1.0)
        run = start(operator, save_workflow, one_step("cheap", extra="    estimated_cost: 0\n"))
        assert held(run_id=run.pk) == pytest.approx(BOUND)

    def test_the_agents_estimated_cost_is_the_projection_of_any_provider(self, operator, save_workflow, queue):
        Agent.objects.create(name="scripted", provider="shell", estimated_cost=0.4)
        BudgetEnvelope.objects.create(name="scripts", scope="agent:scripted", limit=0.5)
        start(operator, save_workflow, one_step("script", "scripted"))
        second = start(operator, save_workflow, one_step("script_again", "scripted"))
        assert work(second).error_code == "budget_exceeded"


class TestTheAgentsBounds:
    @pytest.mark.parametrize(("config", "named"), [
        ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": "10000"}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"), ({"price_per_million": [1.0]}, "price_per_million"),
        ({"price_per_million": [1.0, -2.0]}, "price_per_million"),
        ({"price_per_million": "1,2"}, "price_per_million"),
    ])
    def test_an_openai_agent_with_a_malformed_bound_is_refused_on_save(self, db, config, named):
        agent = Agent(name="writer", provider="openai", config={"model": "gpt-4o", **config})
        with pytest.raises(ValidationError) as refused:
            agent.full_clean()
        assert named in str(refused.value)

    def test_a_price_of_its_own_sets_the_bound(self, operator, save_workflow, queue):
        Agent.objects.create(name="writer", provider="openai",
                             config={"model": "in-house", "max_tokens": 2000, "price_per_million": [50, 100]})
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=1.0)
        run = start(operator, save_workflow, one_step("priced"))
        assert held(run_id=run.pk) == pytest.approx(0.2)

    def test_a_bound_written_around_the_checks_reserves_nothing_and_fails_nothing(
            self, operator, save_workflow, queue):
        Agent.objects.create(name="writer", provider="openai", config={"model": ["gpt-4o"], "max_tokens": "lots"})
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=1.0)
        run = start(operator, save_workflow, one_step("garbled"))
        assert work(run).status == "running"
        assert held() == 0


    def test_the_bound_caps_the_calls_the_agent_makes_and_a_garbled_one_fails_the_step(self, writer):
        assert executor_for(writer).max_tokens == WRITER["max_tokens"]
        garbled = Agent.objects.create(name="garbled", provider="openai",
                                       config={"model": "gpt-4o", "max_tokens": "lots"})
        with pytest.raises(AgentMisconfigured, match="garbled.*max_tokens"):
            executor_for(garbled)


class TestRelease:
    def test_a_cancelled_attempt_releases_its_reservation(self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        assert work(start(operator, save_workflow, one_step("while_it_runs"))).error_code == "budget_exceeded"
        services.run_cancel(user=operator, run=first)
        assert work(first).status == "cancelled"
        assert work(start(operator, save_workflow, one_step("after_the_cancel"))).status == "running"
        assert held(run_id=first.pk) == 0

    def test_a_result_that_arrives_after_the_cancel_still_counts(self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        fence = queue.call_args.args[3]
        services.run_cancel(user=operator, run=first)
        assert report(first, fence, cost=0.07) is Outcome.RUN_ENDED
        assert (spent(), held()) == (0.07, 0)

    def test_a_timed_out_attempt_releases_its_reservation(self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first", extra="    timeout: 5\n"))
        assert work(start(operator, save_workflow, one_step("while_it_runs"))).error_code == "budget_exceeded"
        first = fast_forward(first)
        assert (work(first).status, work(first).error_code) == ("timed_out", "timeout")
        assert work(start(operator, save_workflow, one_step("after_the_timeout"))).status == "running"
        assert held(run_id=first.pk) == 0

    def test_the_timeout_enforcers_verdict_releases_the_reservation_and_keeps_it_open_for_the_real_result(
            self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        fence = queue.call_args.args[3]
        StepResult.objects.filter(pk=work(first).pk).update(deadline_at=timezone.now() - timedelta(minutes=1))
        assert recover()["timed_out"] == 1
        advance(first.pk)
        assert (work(first).error_code, held()) == ("timeout", 0)
        late = complete_step(Completion(first.pk, "work", 1, 0, Result(ok=True, cost=0.05), fence=fence))
        assert late is Outcome.DUPLICATE  # the enforcer's verdict holds the attempt's place in the inbox
        assert spent() == 0.05

    def test_a_run_stopped_by_the_crash_loop_breaker_releases_its_reservations(
            self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        assert work(start(operator, save_workflow, one_step("while_it_runs"))).error_code == "budget_exceeded"
        first.restart_count = 4
        fail_crash_loop(first)
        assert work(first).error_code == "crash_loop"
        assert work(start(operator, save_workflow, one_step("after_the_crash_loop"))).status == "running"
        assert held(run_id=first.pk) == 0

    def test_recovery_releases_a_reservation_its_attempt_left_behind(self, operator, save_workflow, writer, queue):
        envelope = BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        first = start(operator, save_workflow, one_step("first"))
        envelope.delete()  # nothing budgets the step when its free result arrives, so the round leaves it
        report(first, queue.call_args.args[3], cost=0.0, tokens=0)
        assert held() == pytest.approx(BOUND)
        assert recover()["released"] == 1
        assert held() == 0

    def test_recovery_leaves_the_reservation_of_a_running_attempt(self, operator, save_workflow, writer, queue):
        BudgetEnvelope.objects.create(name="summaries", scope="org", limit=0.15)
        start(operator, save_workflow, one_step("first"))
        forget_configuration()
        assert recover()["released"] == 0
        assert held() == pytest.approx(BOUND)


class TestConcurrencyWithinARound:
    def test_a_chain_on_a_one_slot_agent_takes_no_agent_busy_retry(self, operator, save_workflow):
        Agent.objects.create(name="solo", provider="mock", max_concurrency=1)
        run = start(operator, save_workflow, """
name: solo_chain
steps:
  - {id: first, agent: solo, command: one}
  - {id: second, agent: solo, command: two, depends_on: [first]}
  - {id: third, agent: solo, command: three, depends_on: [second]}
""")
        assert run.status == "completed"
        assert not AuditEvent.objects.filter(run_id=run.pk, code="forge.governance.blocked").exists()
        assert AuditEvent.objects.filter(run_id=run.pk, code="forge.governance.allowed").count() == 3
