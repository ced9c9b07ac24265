"""Routing (spec 15): the first healthy gateway covering the step's capabilities, and what the gates make of it."""

from __future__ import annotations

import pytest

from engine.governance import (
    AgentInfo, GateContext, GatewayInfo, PolicyRule, StepInfo, check_policy_expression, evaluate, route,
)

GPU_EU = GatewayInfo("gpu-eu", healthy=True, capabilities=("gpu", "python"))
GPU_US = GatewayInfo("gpu-us", healthy=True, capabilities=("gpu", "python", "docker"))
CPU = GatewayInfo("cpu", healthy=True, capabilities=("python",))


def down(gateway: GatewayInfo) -> GatewayInfo:
    return GatewayInfo(gateway.name, healthy=False, min_trust_level=gateway.min_trust_level,
                       capabilities=gateway.capabilities)


def ctx(gateways, capabilities=(), *, agent_capabilities=(), policies=()) -> GateContext:
    return GateContext(step=StepInfo("1", "train", 1, "trainer", "ml", capabilities=tuple(capabilities)),
                       gateways=tuple(gateways), agent=AgentInfo("trainer", capabilities=tuple(agent_capabilities)),
                       policies=tuple(policies))


class TestRoute:
    def test_the_first_healthy_gateway_in_the_agents_order_is_picked(self):
        found = route((CPU, GPU_EU, GPU_US), ["python"])
        assert (found.gateway, found.code) == (CPU, None)
        assert [g.name for g in found.gateways] == ["cpu", "gpu-eu", "gpu-us"]

    def test_a_gateway_lacking_a_capability_is_passed_over_and_the_reason_says_so(self):
        found = route((CPU, GPU_EU, GPU_US), ["gpu", "docker"])
        assert found.gateway == GPU_US
        assert [g.name for g in found.gateways] == ["gpu-us"]
        assert "'cpu' (lacks 'gpu', 'docker')" in found.reason and "'gpu-eu' (lacks 'docker')" in found.reason

    def test_an_unhealthy_gateway_is_passed_over_and_kept_last_for_failover(self):
        found = route((down(GPU_EU), GPU_US), ["gpu"])
        assert found.gateway == GPU_US
        assert [g.name for g in found.gateways] == ["gpu-us", "gpu-eu"]
        assert "'gpu-eu' (unhealthy)" in found.reason

    def test_no_gateway_covering_the_step_is_capability_missing(self):
        found = route((CPU, GPU_EU), ["tpu"])
        assert (found.gateway, found.code) == (None, "capability_missing")
        assert "'tpu'" in found.reason and "'cpu', 'gpu-eu'" in found.reason

    def test_covering_gateways_all_unhealthy_is_gateway_unreachable(self):
        found = route((CPU, down(GPU_EU), down(GPU_US)), ["gpu"])
        assert (found.gateway, found.code) == (None, "gateway_unreachable")
        assert "'gpu-eu', 'gpu-us'" in found.reason

    def test_an_agent_without_gateways_is_checked_against_its_own_capabilities(self):
        assert route((), ["gpu"], ["gpu", "python"]).code is None
        missing = route((), ["gpu", "python"], ["python"])
        assert missing.code == "capability_missing" and "'gpu'" in missing.reason

    def test_a_step_without_capabilities_goes_to_the_first_healthy_gateway(self):
        assert route((down(CPU), GPU_EU), []).gateway == GPU_EU

    def test_the_route_as_json_names_the_tried_gateways_the_pick_and_why(self):
        data = route((down(GPU_EU), GPU_US), ["gpu"]).to_json()
        assert data["gateways"] == ["gpu-us", "gpu-eu"] and data["gateway"] == "gpu-us"
        assert data["reason"].startswith("gateway 'gpu-us' is the agent's first healthy gateway")


class TestRoutingGate:
    @pytest.mark.parametrize("gateways, capabilities, code, retryable", [
        ((CPU,), ["gpu"], "capability_missing", False),
        ((down(GPU_EU), CPU), ["gpu"], "gateway_unreachable", True),
    ])
    def test_the_first_gate_blocks_with_the_routes_code(self, gateways, capabilities, code, retryable):
        decision = evaluate(ctx(gateways, capabilities))
        assert (decision.outcome, decision.gate, decision.code, decision.retryable) == (
            "block", "gateway_health", code, retryable)

    def test_an_agent_without_gateways_lacking_the_capability_is_blocked_for_good(self):
        decision = evaluate(ctx((), ["gpu"], agent_capabilities=["python"]))
        assert (decision.code, decision.retryable) == ("capability_missing", False)
        assert evaluate(ctx((), ["gpu"], agent_capabilities=["gpu"])).outcome == "allow"


class TestPoliciesReadTheRoutedGateway:
    def test_a_policy_reads_the_picked_gateways_capabilities(self):
        rule = PolicyRule("no-docker", "'docker' in gateway.capabilities", "block", "no containers")
        assert check_policy_expression(rule.when) is None
        blocked = evaluate(ctx((GPU_US,), ["gpu"], policies=(rule,)))
        assert (blocked.code, blocked.message) == ("policy_blocked", "policy 'no-docker' blocks this step: no containers")
        assert evaluate(ctx((GPU_EU, GPU_US), ["gpu"], policies=(rule,))).outcome == "allow"

    def test_a_policy_reads_the_picked_gateways_name(self):
        rule = PolicyRule("eu-approval", "gateway.name == 'gpu-eu'", "require_approval", "EU data")
        assert evaluate(ctx((GPU_EU, GPU_US), ["gpu"], policies=(rule,))).outcome == "hold"
        assert evaluate(ctx((down(GPU_EU), GPU_US), ["gpu"], policies=(rule,))).outcome == "allow"

    def test_a_misspelt_gateway_field_is_refused(self):
        assert "capabilities" in check_policy_expression("'gpu' in gateway.capability")
