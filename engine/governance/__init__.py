"""Governance: the ten dispatch gates of seed 001 as pure functions over a GateContext."""

from engine.governance.context import (
    POLICY_EFFECTS, POLICY_FIELDS, AgentInfo, BudgetEnvelope, ContextTrust, GateContext,
    GatewayInfo, PolicyRule, StepInfo, check_policy_expression, policy_scope,
)
from engine.governance.routing import Route, route
from engine.governance.gates import (
    GATES, GateResult, GovernanceDecision, allow, block, evaluate, hold,
)

__all__ = [
    "GATES", "POLICY_EFFECTS", "POLICY_FIELDS", "AgentInfo", "BudgetEnvelope", "ContextTrust",
    "GateContext", "GateResult", "GatewayInfo", "GovernanceDecision", "PolicyRule", "Route", "StepInfo",
    "allow", "block", "check_policy_expression", "evaluate", "hold", "policy_scope", "route",
]
