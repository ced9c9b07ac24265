"""The governance gates as a user meets them: through real runs, one class per effect.

Transactional database, so runs advance on commit; `fast_forward` brings
gate-retry timers forward.
"""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy, TokenEvent
from forge.runs import services
from forge.runs.models import Approval, RunInput, StepResult
from forge.runtime.rounds import advance
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def one_step(agent="mock", name="governed"):
    return f"""
name: {name}
steps:
  - id: work
    agent: {agent}
    command: do the work
    mock: {{outputs: {{done: true}}, tokens: 100, cost: 0.25}}
"""


def two_steps(agent, *, parallel):
    depends = "" if parallel else "    depends_on: [first]\n"
    return f"""
name: two_steps
steps:
  - id: first
    agent: {agent}
    command: first
    mock: {{outputs: {{a: 1}}}}
  - id: second
    agent: {agent}
    command: second
{depends}    mock: {{outputs: {{b: 2}}}}
"""


def start(operator, save_workflow, source):
    run = services.run_start(user=operator, version=save_workflow(source))
    run.refresh_from_db()
    return run


def step(run, step_id="work"):
    return StepResult.objects.get(run=run, step=step_id)


def blocked_codes(run):
    return [e.detail["code"] for e in AuditEvent.objects.filter(code="forge.governance.blocked", run_id=run.pk)]


def mock_agent(name, gateway=None, **fields):
    agent = Agent.objects.create(name=name, provider="mock", **fields)
    if gateway is not None:
        AgentGateway.objects.create(agent=agent, gateway=gateway)
    return agent


class TestAgentStatus:
    def test_a_disabled_agent_fails_the_step_with_agent_disabled(self, operator, save_workflow):
        disable = Agent.objects.get(name="mock")
        disable.enabled = False
        disable.save()
        run = start(operator, save_workflow, one_step())
        assert (step(run).status, step(run).error_code) == ("failed", "agent_disabled")
        assert "disabled" in step(run).error
        assert (run.status, run.error_code) == ("failed", "agent_disabled")
        event = AuditEvent.objects.get(code="forge.governance.blocked", run_id=run.pk)
        assert (event.step, event.target, event.detail["gate"]) == ("work", "agent:mock", "agent_status")
        assert not TokenEvent.objects.exists()

    def test_an_unregistered_agent_fails_the_step_with_agent_disabled(self, operator, save_workflow):
        run = start(operator, save_workflow, one_step("ghost"))
        assert (step(run).status, step(run).error_code) == ("failed", "agent_disabled")
        assert "not registered" in step(run).error
        assert blocked_codes(run) == ["agent_disabled"]


class TestConcurrency:
    def test_the_second_parallel_step_waits_for_a_slot_then_both_complete(self, operator, save_workflow):
        mock_agent("solo", max_concurrency=1)
        run = start(operator, save_workflow, two_steps("solo", parallel=True))
        second = step(run, "second")
        assert (second.status, second.wait, second.error_code) == ("pending", "gate_retry", "agent_busy")
        assert blocked_codes(run) == ["agent_busy"]
        run = fast_forward(run)
        assert run.status == "completed"
        assert step(run, "first").status == step(run, "second").status == "completed"
        assert step(run, "second").outputs == {"b": 2}


class TestRateLimit:
    def test_a_rate_limited_dispatch_is_retried_after_1_2_and_4_seconds_then_fails(self, operator, save_workflow):
        mock_agent("slow_api", rate_limit_per_minute=1)
        run = start(operator, save_workflow, two_steps("slow_api", parallel=False))
        assert step(run, "first").status == "completed"
        second = step(run, "second")
        assert (second.status, second.wait, second.error_code) == ("pending", "gate_retry", "rate_limited")
        blocked_at = AuditEvent.objects.get(code="forge.governance.blocked", run_id=run.pk).at
        dues = []
        for _ in range(3):  # each retry is a timer row; note when it is due, then let it fire now
            timer = RunInput.objects.get(run=run, processed_at=None, key__startswith="timer:",
                                         due_at__lt=blocked_at + timedelta(seconds=60))  # not the 1 h timeouts
            dues.append(timer.due_at)
            RunInput.objects.filter(pk=timer.pk).update(due_at=timezone.now())
            advance(run.pk)
        run.refresh_from_db()
        second = step(run, "second")
        assert (second.status, second.error_code) == ("failed", "rate_limited")
        assert (run.status, run.error_code) == ("failed", "rate_limited")
        assert blocked_codes(run) == ["rate_limited"] * 4
        gaps = [round((later - earlier).total_seconds(), 3) for earlier, later in zip([blocked_at] + dues, dues)]
        assert gaps == [1.0, 2.0, 4.0]


class TestBudgets:
    def test_an_agent_over_its_monthly_budget_is_blocked(self, operator, save_workflow):
        mock_agent("pricey", monthly_budget=1.0)
        TokenEvent.objects.create(run_id=999, step="earlier", attempt=1, agent="pricey", workflow="other",
                                  tokens=5000, cost=1.5, at=timezone.now())
        run = start(operator, save_workflow, one_step("pricey"))
        assert (step(run).status, step(run).error_code) == ("failed", "budget_exceeded")
        assert blocked_codes(run) == ["budget_exceeded"]

    def test_last_months_spend_does_not_count_against_the_monthly_budget(self, operator, save_workflow):
        mock_agent("pricey", monthly_budget=1.0)
        long_ago = timezone.now().replace(day=1) - timedelta(days=40)
        TokenEvent.objects.create(run_id=999, step="earlier", attempt=1, agent="pricey", workflow="other",
                                  cost=5.0, at=long_ago)
        run = start(operator, save_workflow, one_step("pricey"))
        assert run.status == "completed"

    def test_a_workflow_envelope_over_its_limit_blocks_the_workflows_steps(self, operator, save_workflow):
        BudgetEnvelope.objects.create(name="governed cap", scope="workflow:governed", limit=1.0)
        TokenEvent.objects.create(run_id=999, step="earlier", attempt=1, agent="mock", workflow="governed",
                                  cost=2.0, at=timezone.now())
        run = start(operator, save_workflow, one_step())
        assert (step(run).status, step(run).error_code) == ("failed", "budget_exceeded")
        assert "governed cap" in step(run).error
        other = start(operator, save_workflow, one_step(name="not_governed"))
        assert other.status == "completed"


class TestPolicies:
    def test_a_blocking_policy_fails_the_step_with_policy_blocked(self, operator, save_workflow):
        Policy.objects.create(name="no mock in prod", when="step.agent == 'mock'", effect="block",
                              message="mock is for demos")
        run = start(operator, save_workflow, one_step())
        assert (step(run).status, step(run).error_code) == ("failed", "policy_blocked")
        assert "mock is for demos" in step(run).error
        assert blocked_codes(run) == ["policy_blocked"]

    def test_a_policy_that_requires_approval_holds_the_step_until_approved(self, operator, approver,
                                                                           save_workflow):
        Policy.objects.create(name="look first", when="step.workflow == 'governed'", effect="require_approval")
        run = start(operator, save_workflow, one_step())
        assert (step(run).status, step(run).wait) == ("waiting", "hold")
        hold = Approval.objects.get(run=run)
        assert (hold.kind, hold.status, hold.step) == ("hold", "pending", "work")
        assert "look first" in hold.message
        assert AuditEvent.objects.filter(code="forge.governance.held", run_id=run.pk).count() == 1
        assert not TokenEvent.objects.exists()
        services.approval_decide(user=approver, approval=hold, decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"
        assert step(run).outputs == {"done": True}
        assert AuditEvent.objects.filter(code="forge.governance.allowed", run_id=run.pk).count() == 1

    def test_rejecting_a_hold_fails_the_step(self, operator, approver, save_workflow):
        Policy.objects.create(name="look first", when="step.workflow == 'governed'", effect="require_approval")
        run = start(operator, save_workflow, one_step())
        services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="reject")
        run.refresh_from_db()
        assert (step(run).status, step(run).error_code) == ("failed", "rejected")
        assert run.status == "failed"


class TestAgentRequiresApproval:
    def test_every_step_of_the_agent_is_held_for_a_person(self, operator, approver, save_workflow):
        mock_agent("careful", requires_approval=True)
        run = start(operator, save_workflow, one_step("careful"))
        hold = Approval.objects.get(run=run)
        assert (hold.kind, step(run).status) == ("hold", "waiting")
        services.approval_decide(user=approver, approval=hold, decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"


class TestGatewayHealth:
    def test_an_unreachable_gateway_is_retried_and_the_step_runs_once_it_is_back(self, operator, save_workflow):
        gateway = Gateway.objects.create(name="edge", url="http://edge.invalid/dispatch", healthy=False)
        mock_agent("remote", gateway=gateway)
        run = start(operator, save_workflow, one_step("remote"))
        work = step(run)
        assert (work.status, work.wait, work.error_code) == ("pending", "gate_retry", "gateway_unreachable")
        assert blocked_codes(run) == ["gateway_unreachable"]
        gateway.healthy = True
        gateway.save()  # as an admin or a health check does: the next dispatch sees it
        run = fast_forward(run)
        assert run.status == "completed"
        assert step(run).outputs == {"done": True}

    def test_a_gateway_that_stays_down_fails_the_step_after_the_retries(self, operator, save_workflow):
        mock_agent("remote", gateway=Gateway.objects.create(name="edge", healthy=False))
        run = fast_forward(start(operator, save_workflow, one_step("remote")))
        assert (step(run).status, step(run).error_code) == ("failed", "gateway_unreachable")
        assert blocked_codes(run) == ["gateway_unreachable"] * 4


class TestSpendRecords:
    def test_a_mock_steps_tokens_and_cost_are_recorded_once_per_call(self, operator, save_workflow):
        run = fast_forward(start(operator, save_workflow, one_step()))
        assert run.status == "completed"
        spent = list(TokenEvent.objects.values_list("run_id", "step", "attempt", "agent", "workflow", "tokens",
                                                    "cost"))
        assert spent == [(run.pk, "work", 1, "mock", "governed", 100, 0.25)]
        assert (step(run).tokens, step(run).cost) == (100, 0.25)

    def test_a_retried_step_records_one_row_per_attempt(self, operator, save_workflow):
        source = one_step().replace("tokens: 100", "fail_times: 1, tokens: 100").replace(
            "    mock:", "    on_failure: retry_once\n    mock:")
        run = fast_forward(start(operator, save_workflow, source))
        assert run.status == "completed"
        assert list(TokenEvent.objects.order_by("attempt").values_list("attempt", "tokens")) == [(1, 100), (2, 100)]
        assert (step(run).tokens, step(run).cost) == (200, 0.5)


class TestConfigurationChanges:
    def test_a_change_made_by_another_process_governs_dispatches_after_the_refresh_interval(
            self, operator, save_workflow, settings):
        settings.FORGE_GOVERNANCE_REFRESH_S = 0.2
        assert start(operator, save_workflow, one_step()).status == "completed"
        # An update that sends no signal here, as a save in the console's process or another cluster does.
        Agent.objects.filter(name="mock").update(enabled=False)
        time.sleep(0.25)
        run = start(operator, save_workflow, one_step(name="after_the_change"))
        assert (run.status, step(run).error_code) == ("failed", "agent_disabled")

    def test_a_save_in_this_process_governs_the_next_dispatch_at_once(self, operator, save_workflow, settings):
        settings.FORGE_GOVERNANCE_REFRESH_S = 3600
        assert start(operator, save_workflow, one_step()).status == "completed"
        Policy.objects.create(name="no_mock", when="step.agent == 'mock'", effect="block", message="not today")
        run = start(operator, save_workflow, one_step(name="after_the_policy"))
        assert (run.status, step(run).error_code) == ("failed", "policy_blocked")
