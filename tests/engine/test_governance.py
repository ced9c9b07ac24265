"""The ten dispatch gates, one class per gate, then the pipeline that runs them."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

import pytest

from engine.governance import (
    GATES, POLICY_FIELDS, AgentInfo, BudgetEnvelope, ContextTrust, GateContext, GatewayInfo,
    GovernanceDecision, PolicyRule, StepInfo, allow, block, check_policy_expression, evaluate,
    policy_scope,
)
from engine.governance import context as governance_context
from engine.governance import gates

UNTRUSTED_SPEND = PolicyRule("untrusted-spend", "agent.trust_level < 2 and step.estimated_cost > 5",
                             "block", "untrusted agents may not spend more than 5")
LARGE_PAYMENTS = PolicyRule("large-payments", "step.workflow == 'payments' and args.amount > 1000",
                            "block", "payments over 1000 go through treasury")
NO_DEPLOYS = PolicyRule("no-deploys", "'deploy' in step.capabilities", "block", "deploys are frozen")


def make_ctx(*, step=None, gateway=None, agent=None, gateways=None, **fields) -> GateContext:
    """A dispatch every gate allows; each test changes only what it is about (`gateway`: the agent's one gateway,
    `gateways`: its whole list)."""
    base_step = StepInfo(run_id="run-1", step="review", attempt=1, agent="writer",
                         workflow="vendor_review", capabilities=("summarize",),
                         args={"vendor": "acme", "amount": 200}, estimated_cost=2.0)
    base_gateway = GatewayInfo(name="gw-eu", healthy=True, min_trust_level=1, capabilities=("summarize", "deploy"))
    base_agent = AgentInfo(name="writer", role="writer", trust_level=2, max_concurrency=2, running=0,
                           rate_limit_per_minute=10, dispatches_last_minute=0,
                           monthly_budget=100.0, month_spend=10.0)
    return GateContext(
        step=dataclasses.replace(base_step, **(step or {})),
        gateways=(dataclasses.replace(base_gateway, **(gateway or {})),) if gateways is None else gateways,
        agent=dataclasses.replace(base_agent, **(agent or {})),
        **fields)


def assert_blocks(result, code: str, retryable: bool, *named: str):
    assert (result.outcome, result.code, result.retryable) == ("block", code, retryable)
    for word in named:
        assert word in result.message


class TestGatewayHealthGate:
    def test_it_blocks_a_step_bound_for_an_unreachable_gateway(self):
        result = gates.gateway_health(make_ctx(gateway={"healthy": False}))
        assert_blocks(result, "gateway_unreachable", True, "gw-eu", "unhealthy")

    def test_it_does_not_fire_when_the_gateway_is_healthy(self):
        assert gates.gateway_health(make_ctx()) == allow()

    def test_it_does_not_fire_when_the_agent_has_no_gateway_and_the_step_needs_nothing(self):
        assert gates.gateway_health(make_ctx(gateways=(), step={"capabilities": ()})) == allow()


class TestAgentStatusGate:
    def test_it_blocks_a_disabled_agent(self):
        result = gates.agent_status(make_ctx(agent={"enabled": False}))
        assert_blocks(result, "agent_disabled", False, "'writer'", "disabled")

    def test_it_blocks_an_enabled_agent_that_is_not_active(self):
        result = gates.agent_status(make_ctx(agent={"status": "paused"}))
        assert_blocks(result, "agent_disabled", False, "'writer'", "paused")

    def test_it_blocks_a_step_whose_agent_is_not_registered_and_names_the_agent(self):
        ctx = dataclasses.replace(make_ctx(), agent=None)
        assert_blocks(gates.agent_status(ctx), "agent_disabled", False, "'writer'", "not registered")

    def test_it_does_not_fire_for_an_enabled_active_agent(self):
        assert gates.agent_status(make_ctx()) == allow()


class TestConcurrencyGate:
    def test_it_blocks_an_agent_running_as_many_steps_as_its_limit(self):
        result = gates.concurrency(make_ctx(agent={"running": 2, "max_concurrency": 2}))
        assert_blocks(result, "agent_busy", True, "'writer'", "2")

    def test_it_does_not_fire_when_the_agent_has_a_free_slot(self):
        assert gates.concurrency(make_ctx(agent={"running": 1, "max_concurrency": 2})) == allow()

    def test_it_does_not_fire_when_no_concurrency_limit_is_set(self):
        assert gates.concurrency(make_ctx(agent={"running": 50, "max_concurrency": None})) == allow()


class TestRateLimitGate:
    def test_it_blocks_an_agent_that_reached_its_dispatches_per_minute(self):
        result = gates.rate_limit(make_ctx(agent={"dispatches_last_minute": 10}))
        assert_blocks(result, "rate_limited", True, "'writer'", "10")

    def test_it_does_not_fire_below_the_rate_limit(self):
        assert gates.rate_limit(make_ctx(agent={"dispatches_last_minute": 9})) == allow()

    def test_it_does_not_fire_when_no_rate_limit_is_set(self):
        ctx = make_ctx(agent={"rate_limit_per_minute": None, "dispatches_last_minute": 500})
        assert gates.rate_limit(ctx) == allow()


class TestBudgetAgentGate:
    def test_it_blocks_an_agent_over_its_monthly_budget(self):
        result = gates.budget_agent(make_ctx(agent={"month_spend": 120.0}))
        assert_blocks(result, "budget_exceeded", False, "'writer'", "monthly budget of 100.00")

    def test_it_blocks_a_step_whose_estimate_would_push_the_agent_over_budget(self):
        ctx = make_ctx(agent={"month_spend": 99.0}, step={"estimated_cost": 1.5})
        assert_blocks(gates.budget_agent(ctx), "budget_exceeded", False, "100.50")

    def test_it_does_not_fire_when_the_step_spends_the_budget_exactly(self):
        ctx = make_ctx(agent={"month_spend": 98.0}, step={"estimated_cost": 2.0})
        assert gates.budget_agent(ctx) == allow()

    def test_it_does_not_fire_when_the_agent_has_no_monthly_budget(self):
        ctx = make_ctx(agent={"monthly_budget": None, "month_spend": 10_000.0})
        assert gates.budget_agent(ctx) == allow()

    def test_it_counts_what_the_agents_steps_in_flight_reserved(self):
        ctx = make_ctx(agent={"month_spend": 90.0, "month_reserved": 9.0}, step={"estimated_cost": 2.0})
        assert_blocks(gates.budget_agent(ctx), "budget_exceeded", False, "101.00", "90.00 spent",
                      "9.00 reserved by steps in flight")

    def test_it_does_not_fire_when_spend_reservations_and_the_step_fill_the_budget_exactly(self):
        ctx = make_ctx(agent={"month_spend": 90.0, "month_reserved": 8.0}, step={"estimated_cost": 2.0})
        assert gates.budget_agent(ctx) == allow()


class TestBudgetEnvelopesGate:
    @pytest.mark.parametrize("scope", ["org", "workflow:vendor_review", "agent:writer"])
    def test_it_blocks_when_an_envelope_covering_the_step_would_be_exceeded(self, scope):
        ctx = make_ctx(envelopes=(BudgetEnvelope("q3-spend", scope, limit=50.0, spent=49.0),))
        assert_blocks(gates.budget_envelopes(ctx), "budget_exceeded", False, "'q3-spend'", scope, "50.00")

    def test_it_names_the_first_exceeded_envelope(self):
        ctx = make_ctx(envelopes=(BudgetEnvelope("org-year", "org", limit=1000.0, spent=10.0),
                                  BudgetEnvelope("writer-month", "agent:writer", limit=5.0, spent=5.0),
                                  BudgetEnvelope("org-month", "org", limit=5.0, spent=5.0)))
        result = gates.budget_envelopes(ctx)
        assert "'writer-month'" in result.message and "org-month" not in result.message

    def test_it_does_not_fire_for_envelopes_of_other_workflows_and_agents(self):
        ctx = make_ctx(envelopes=(BudgetEnvelope("payments", "workflow:payments", limit=1.0, spent=9.0),
                                  BudgetEnvelope("reader", "agent:reader", limit=1.0, spent=9.0)))
        assert gates.budget_envelopes(ctx) == allow()

    def test_it_does_not_fire_when_the_envelope_has_room_for_the_step(self):
        ctx = make_ctx(envelopes=(BudgetEnvelope("q3-spend", "org", limit=50.0, spent=48.0),))
        assert gates.budget_envelopes(ctx) == allow()

    def test_it_counts_what_steps_in_flight_reserved_against_the_envelope(self):
        ctx = make_ctx(envelopes=(BudgetEnvelope("q3-spend", "org", limit=50.0, spent=40.0, reserved=9.0),))
        assert_blocks(gates.budget_envelopes(ctx), "budget_exceeded", False, "51.00", "40.00 spent",
                      "9.00 reserved by steps in flight")

    def test_it_does_not_fire_when_spend_reservations_and_the_step_fill_the_envelope_exactly(self):
        ctx = make_ctx(envelopes=(BudgetEnvelope("q3-spend", "org", limit=50.0, spent=40.0, reserved=8.0),))
        assert gates.budget_envelopes(ctx) == allow()

    def test_ten_steps_of_three_cents_fit_a_thirty_cent_envelope_and_an_eleventh_does_not(self):
        nine = sum([0.03] * 9)  # 0.27, give or take the float's rounding
        tenth = make_ctx(step={"estimated_cost": 0.03},
                         envelopes=(BudgetEnvelope("pennies", "org", limit=0.3, spent=0.0, reserved=nine),))
        assert gates.budget_envelopes(tenth) == allow()
        eleventh = make_ctx(step={"estimated_cost": 0.03},
                            envelopes=(BudgetEnvelope("pennies", "org", limit=0.3, spent=nine + 0.03),))
        assert_blocks(gates.budget_envelopes(eleventh), "budget_exceeded", False, "'pennies'")


class TestTrustLevelGate:
    def test_it_blocks_an_agent_below_the_gateways_minimum_trust(self):
        result = gates.trust_level(make_ctx(agent={"trust_level": 1}, gateway={"min_trust_level": 3}))
        assert_blocks(result, "trust_level_insufficient", False, "'writer'", "'gw-eu'", "3")

    def test_it_does_not_fire_when_the_agent_meets_the_minimum_exactly(self):
        ctx = make_ctx(agent={"trust_level": 3}, gateway={"min_trust_level": 3})
        assert gates.trust_level(ctx) == allow()

    def test_it_does_not_fire_when_there_is_no_gateway_record(self):
        ctx = make_ctx(agent={"trust_level": 0, "capabilities": ("summarize",)}, gateways=())
        assert gates.trust_level(ctx) == allow()

    def test_it_reads_the_gateway_routing_picked(self):
        strict = GatewayInfo("strict", healthy=True, min_trust_level=9, capabilities=("summarize",))
        down = GatewayInfo("down", healthy=False, min_trust_level=0, capabilities=("summarize",))
        result = gates.trust_level(make_ctx(gateways=(down, strict)))
        assert_blocks(result, "trust_level_insufficient", False, "'strict'", "9")


class TestContextTrustGate:
    def test_it_blocks_when_the_context_is_less_trusted_than_the_role_requires(self):
        ctx = make_ctx(context_trust=ContextTrust(level=1, required_by_role={"writer": 2}))
        assert_blocks(gates.context_trust(ctx), "context_untrusted", False, "'writer'", "requires 2")

    def test_it_does_not_fire_when_the_context_meets_the_role_requirement(self):
        ctx = make_ctx(context_trust=ContextTrust(level=2, required_by_role={"writer": 2}))
        assert gates.context_trust(ctx) == allow()

    def test_it_does_not_fire_when_the_agents_role_has_no_requirement(self):
        ctx = make_ctx(context_trust=ContextTrust(level=0, required_by_role={"deployer": 3}))
        assert gates.context_trust(ctx) == allow()

    def test_it_does_not_fire_when_context_trust_is_not_tracked(self):
        assert gates.context_trust(make_ctx(context_trust=None)) == allow()


class TestPolicyRulesGate:
    def test_it_blocks_an_untrusted_agent_spending_over_five(self):
        ctx = make_ctx(agent={"trust_level": 1}, step={"estimated_cost": 6.0}, policies=(UNTRUSTED_SPEND,))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False,
                      "'untrusted-spend'", "may not spend more than 5")

    def test_it_blocks_a_large_payment_read_from_the_run_arguments(self):
        ctx = make_ctx(step={"workflow": "payments", "args": {"amount": 1500}}, policies=(LARGE_PAYMENTS,))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False, "'large-payments'", "treasury")

    def test_it_blocks_a_step_that_requires_a_forbidden_capability(self):
        ctx = make_ctx(step={"capabilities": ("summarize", "deploy")}, policies=(NO_DEPLOYS,))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False, "'no-deploys'")

    def test_it_reads_nested_arguments_given_as_read_only_mappings_and_tuples(self):
        rule = PolicyRule("embargo", "args.vendor.country in ['KP', 'IR'] or 'sanctioned' in args.vendor.tags",
                          "block")
        vendor = MappingProxyType({"country": "FR", "tags": ("new", "sanctioned")})
        ctx = make_ctx(step={"args": MappingProxyType({"vendor": vendor})}, policies=(rule,))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False, "'embargo'")

    def test_it_names_the_first_blocking_policy_that_holds(self):
        ctx = make_ctx(step={"workflow": "payments", "args": {"amount": 5000}, "capabilities": ("deploy",)},
                       policies=(NO_DEPLOYS, LARGE_PAYMENTS))
        assert "'no-deploys'" in gates.policy_rules(ctx).message

    def test_it_does_not_fire_when_no_policy_holds(self):
        ctx = make_ctx(step={"workflow": "payments", "args": {"amount": 500}},
                       policies=(UNTRUSTED_SPEND, LARGE_PAYMENTS, NO_DEPLOYS))
        assert gates.policy_rules(ctx) == allow()

    def test_it_does_not_fire_for_a_policy_that_only_requires_approval(self):
        rule = dataclasses.replace(NO_DEPLOYS, effect="require_approval")
        ctx = make_ctx(step={"capabilities": ("deploy",)}, policies=(rule,))
        assert gates.policy_rules(ctx) == allow()

    @pytest.mark.parametrize("when", [
        "step.estimated_cost >",          # does not parse
        "agent.trust_lvl < 2",            # misspelt field: would read as null and never match
        "steps.workflow == 'payments'",  # unknown root
    ])
    def test_it_blocks_when_a_policy_cannot_be_checked(self, when):
        ctx = make_ctx(policies=(PolicyRule("broken", when, "require_approval"),))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False, "'broken'", "cannot be checked")

    def test_it_blocks_when_a_policy_fails_while_being_evaluated(self):
        rule = PolicyRule("vendor-pattern", "args.vendor.matches(args.pattern)", "block")
        ctx = make_ctx(step={"args": {"vendor": "acme", "pattern": "("}}, policies=(rule,))
        assert_blocks(gates.policy_rules(ctx), "policy_blocked", False,
                      "'vendor-pattern'", "cannot be checked", "regular expression")


class TestApprovalRequiredGate:
    def test_it_holds_a_step_whose_configuration_requires_approval(self):
        result = gates.approval_required(make_ctx(approval_required=True))
        assert (result.outcome, result.code, result.kind) == ("hold", None, "approval")
        assert "'review'" in result.message

    def test_it_holds_a_step_when_an_approval_policy_holds(self):
        rule = PolicyRule("big-spend", "step.estimated_cost > 5", "require_approval", "finance signs off")
        result = gates.approval_required(make_ctx(step={"estimated_cost": 8.0}, policies=(rule,)))
        assert (result.outcome, result.code, result.kind) == ("hold", None, "policy")
        assert "'big-spend'" in result.message and "finance signs off" in result.message

    def test_it_holds_rather_than_allows_when_run_alone_on_a_broken_approval_policy(self):
        ctx = make_ctx(policies=(PolicyRule("broken", "step.cost >", "require_approval"),))
        assert gates.approval_required(ctx).outcome == "hold"

    def test_it_does_not_fire_once_a_person_approved_the_hold(self):
        rule = PolicyRule("big-spend", "step.estimated_cost > 5", "require_approval")
        ctx = make_ctx(step={"estimated_cost": 8.0}, policies=(rule,),
                       approval_required=True, approval_granted=True)
        assert gates.approval_required(ctx) == allow()

    def test_it_does_not_fire_when_nothing_asks_for_approval(self):
        rule = PolicyRule("big-spend", "step.estimated_cost > 5", "require_approval")
        assert gates.approval_required(make_ctx(policies=(rule, UNTRUSTED_SPEND))) == allow()


class TestPolicyDefinitions:
    @pytest.mark.parametrize("rule", [UNTRUSTED_SPEND, LARGE_PAYMENTS, NO_DEPLOYS])
    def test_the_example_policies_are_accepted(self, rule):
        assert check_policy_expression(rule.when) is None

    def test_a_syntax_error_is_reported_with_its_position(self):
        message = check_policy_expression("agent.trust_level = 2")
        assert "'=='" in message and "position 19" in message

    def test_a_misspelt_field_is_reported_with_the_fields_that_exist(self):
        message = check_policy_expression("agent.trust_lvl < 2")
        assert "trust_lvl" in message and "trust_level" in message

    def test_a_step_output_reference_is_refused(self):
        assert "$review" in check_policy_expression("$review.outputs.ok == true")

    def test_every_name_a_policy_may_read_is_in_its_scope(self):
        scope = policy_scope(make_ctx())
        assert set(scope) == set(POLICY_FIELDS)
        for root, fields in POLICY_FIELDS.items():
            if fields is not None:
                assert set(scope[root]) == fields, root

    def test_a_policy_with_an_unknown_effect_is_refused(self):
        with pytest.raises(ValueError, match="'warn'"):
            PolicyRule("soft", "true", "warn")

    def test_each_policy_is_parsed_at_most_once_per_evaluation(self, monkeypatch):
        calls = []
        real_parse = governance_context.parse
        monkeypatch.setattr(governance_context, "parse", lambda text: calls.append(text) or real_parse(text))
        governance_context._compile.cache_clear()
        rule = PolicyRule("big-spend", "step.estimated_cost > 5 and run.id == 'run-1'", "require_approval")
        try:
            evaluate(make_ctx(policies=(rule, LARGE_PAYMENTS)))
        finally:
            governance_context._compile.cache_clear()
        assert sorted(calls) == sorted([rule.when, LARGE_PAYMENTS.when])


GATE_NAMES = ("gateway_health", "agent_status", "concurrency", "rate_limit", "budget_agent",
              "budget_envelopes", "trust_level", "context_trust", "policy_rules", "approval_required")


class TestEvaluate:
    def test_the_gates_run_in_the_order_of_seed_001(self):
        assert tuple(name for name, _ in GATES) == GATE_NAMES

    def test_it_allows_a_dispatch_every_gate_passes_with_all_ten_in_the_trail(self):
        decision = evaluate(make_ctx(policies=(UNTRUSTED_SPEND, LARGE_PAYMENTS, NO_DEPLOYS)))
        assert (decision.outcome, decision.gate, decision.code) == ("allow", None, None)
        assert decision.trail == tuple((name, "allow") for name in GATE_NAMES)

    def test_the_first_failing_gate_wins_over_later_ones(self):
        ctx = make_ctx(gateway={"healthy": False, "min_trust_level": 9},
                       agent={"enabled": False, "month_spend": 500.0}, approval_required=True)
        decision = evaluate(ctx)
        assert (decision.gate, decision.code) == ("gateway_health", "gateway_unreachable")
        assert decision.trail == (("gateway_health", "block"),)

    def test_the_trail_lists_exactly_the_gates_evaluated(self):
        decision = evaluate(make_ctx(agent={"month_spend": 500.0}, policies=(NO_DEPLOYS,),
                                     step={"capabilities": ("deploy",)}))
        assert (decision.gate, decision.code) == ("budget_agent", "budget_exceeded")
        assert decision.trail == tuple((name, "allow") for name in GATE_NAMES[:4]) + (("budget_agent", "block"),)

    def test_it_stops_calling_gates_after_the_first_block(self):
        called = []

        def spy(name, result):
            return name, lambda ctx: called.append(name) or result

        decision = evaluate(make_ctx(), gates=(spy("a", allow()), spy("b", block("agent_busy", True, "busy")),
                                               spy("c", block("policy_blocked", False, "no"))))
        assert called == ["a", "b"]
        assert (decision.gate, decision.code, decision.message) == ("b", "agent_busy", "busy")

    def test_it_holds_a_step_needing_approval_and_allows_it_once_approved(self):
        held = evaluate(make_ctx(approval_required=True))
        approved = evaluate(make_ctx(approval_required=True, approval_granted=True))
        assert (held.outcome, held.gate, held.code, held.retryable) == ("hold", "approval_required", None, False)
        assert held.trail[-1] == ("approval_required", "hold")
        assert approved.outcome == "allow" and len(approved.trail) == 10

    def test_an_approved_hold_does_not_bypass_a_blocking_policy(self):
        ctx = make_ctx(step={"capabilities": ("deploy",)}, policies=(NO_DEPLOYS,),
                       approval_required=True, approval_granted=True)
        decision = evaluate(ctx)
        assert (decision.outcome, decision.gate) == ("block", "policy_rules")

    def test_a_broken_approval_policy_blocks_instead_of_holding(self):
        ctx = make_ctx(policies=(PolicyRule("broken", "step.estimated_cost >", "require_approval"),))
        decision = evaluate(ctx)
        assert (decision.outcome, decision.gate, decision.code) == ("block", "policy_rules", "policy_blocked")
        assert "'broken'" in decision.message

    @pytest.mark.parametrize("change, code, retryable", [
        ({"gateway": {"healthy": False}}, "gateway_unreachable", True),
        ({"agent": {"status": "archived"}}, "agent_disabled", False),
        ({"agent": {"running": 2}}, "agent_busy", True),
        ({"agent": {"dispatches_last_minute": 10}}, "rate_limited", True),
        ({"agent": {"month_spend": 100.0}}, "budget_exceeded", False),
        ({"envelopes": (BudgetEnvelope("org", "org", 1.0, 0.0),)}, "budget_exceeded", False),
        ({"gateway": {"min_trust_level": 5}}, "trust_level_insufficient", False),
        ({"context_trust": ContextTrust(0, {"writer": 1})}, "context_untrusted", False),
        ({"policies": (NO_DEPLOYS,), "step": {"capabilities": ("deploy",)}}, "policy_blocked", False),
    ])
    def test_only_transient_blocks_are_retryable(self, change, code, retryable):
        decision = evaluate(make_ctx(**change))
        assert (decision.outcome, decision.code, decision.retryable) == ("block", code, retryable)

    @pytest.mark.parametrize("ctx", [
        make_ctx(),
        make_ctx(agent={"month_spend": 500.0}),
        make_ctx(approval_required=True),
    ], ids=["allow", "block", "hold"])
    def test_a_decision_survives_a_round_trip_through_json(self, ctx):
        decision = evaluate(ctx)
        restored = GovernanceDecision.from_json(json.loads(json.dumps(decision.to_json())))
        assert restored == decision
