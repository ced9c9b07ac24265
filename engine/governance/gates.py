"""The ten dispatch gates of seed 001, in order, fail-fast.

Each gate is a pure function of a GateContext that returns allow(),
block(code, retryable, message) or hold(kind, message). `evaluate` runs them
in order and stops at the first that does not allow. Cheap, transient checks
come first so a busy or unreachable target is retried before budgets and
policies are weighed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.expressions import Scope
from engine.governance.context import GateContext, PolicyRule, policy_scope, rule_holds
from engine.governance.routing import GATEWAY_UNREACHABLE
from engine.money import money_text

ALLOW, BLOCK, HOLD = "allow", "block", "hold"


@dataclass(frozen=True, slots=True)
class GateResult:
    """What one gate said: outcome "allow", "block" or "hold", and why."""

    outcome: str
    code: str | None = None
    retryable: bool = False
    message: str = ""
    kind: str | None = None


_ALLOWED = GateResult(ALLOW)


def allow() -> GateResult:
    """The gate has no objection."""
    return _ALLOWED


def block(code: str, retryable: bool, message: str) -> GateResult:
    """Stop the dispatch.

    Args:
        code: the stable error code (`agent_busy`, `budget_exceeded`, ...).
        retryable: whether the condition may clear by itself, so the
            dispatch is tried again after a backoff.
        message: why, for people.

    Returns:
        A block result.
    """
    return GateResult(BLOCK, code=code, retryable=retryable, message=message)


def hold(kind: str, message: str) -> GateResult:
    """Wait for a person to approve before dispatching.

    Args:
        kind: what asked for the approval: "approval" (configuration) or "policy".
        message: why, for the approver.

    Returns:
        A hold result.
    """
    return GateResult(HOLD, message=message, kind=kind)


Gate = Callable[[GateContext], GateResult]


def _why(rule: PolicyRule) -> str:
    return rule.message or f"when {rule.when}"


# -- the gates ---------------------------------------------------------------

def gateway_health(ctx: GateContext) -> GateResult:
    """A step goes to the agent's first healthy gateway that covers its capabilities (engine.governance.routing):
    none covering it blocks for good (`capability_missing`), covering ones all unhealthy for now
    (`gateway_unreachable`)."""
    if ctx.agent is None and not ctx.gateways:
        return allow()  # an agent that is not registered is agent_status's to refuse
    found = ctx.route
    if found.code is not None:
        return block(found.code, found.code == GATEWAY_UNREACHABLE, found.reason)
    return allow()


def agent_status(ctx: GateContext) -> GateResult:
    """Only a registered, enabled, active agent is dispatched to."""
    agent = ctx.agent
    if agent is None:
        return block("agent_disabled", False, f"agent {ctx.step.agent!r} is not registered")
    if not agent.enabled:
        return block("agent_disabled", False, f"agent {agent.name!r} is disabled")
    if agent.status != "active":
        return block("agent_disabled", False, f"agent {agent.name!r} is {agent.status}, not active")
    return allow()


def concurrency(ctx: GateContext) -> GateResult:
    """An agent never runs more steps at once than its max_concurrency."""
    agent = ctx.agent
    if agent is not None and agent.max_concurrency is not None and agent.running >= agent.max_concurrency:
        return block("agent_busy", True, f"agent {agent.name!r} is running {agent.running} "
                                         f"of at most {agent.max_concurrency} steps")
    return allow()


def rate_limit(ctx: GateContext) -> GateResult:
    """An agent receives at most rate_limit_per_minute dispatches in any 60 seconds."""
    agent = ctx.agent
    limit = None if agent is None else agent.rate_limit_per_minute
    # This dispatch would be one more, so reaching the limit already blocks.
    if limit is not None and agent.dispatches_last_minute >= limit:
        return block("rate_limited", True, f"agent {agent.name!r} had {agent.dispatches_last_minute} "
                                           f"dispatches in the last minute; its limit is {limit}")
    return allow()


def _over(total: float, limit: float) -> bool:
    # Spend is summed in floating point (ten steps of 0.03 make 0.30000000000000004): an excess of a
    # billionth of the limit is rounding, not spend.
    return total > limit + 1e-9 * max(1.0, abs(limit))


def _committed(spent: float, reserved: float) -> str:
    held = f", {money_text(reserved)} reserved by steps in flight" if reserved else ""
    return f"{money_text(spent)} spent{held}"


def budget_agent(ctx: GateContext) -> GateResult:
    """An agent's spend this month, with what its steps in flight reserved and this step's estimate, stays
    within its monthly budget."""
    agent = ctx.agent
    if agent is None or agent.monthly_budget is None:
        return allow()
    total = agent.month_spend + agent.month_reserved + ctx.step.estimated_cost
    if _over(total, agent.monthly_budget):
        return block("budget_exceeded", False,
                     f"agent {agent.name!r} would spend {money_text(total)} this month, over its monthly "
                     f"budget of {money_text(agent.monthly_budget)} "
                     f"({_committed(agent.month_spend, agent.month_reserved)})")
    return allow()


def budget_envelopes(ctx: GateContext) -> GateResult:
    """No budget envelope covering the step (org, its workflow, its agent) goes over its limit, counting what
    steps in flight reserved and this step's estimate."""
    step = ctx.step
    scopes = ("org", f"workflow:{step.workflow}", f"agent:{step.agent}")
    for envelope in ctx.envelopes:
        if envelope.scope not in scopes:
            continue
        total = envelope.spent + envelope.reserved + step.estimated_cost
        if _over(total, envelope.limit):
            return block("budget_exceeded", False,
                         f"budget {envelope.name!r} ({envelope.scope}) would reach {money_text(total)}, "
                         f"over its limit of {money_text(envelope.limit)} "
                         f"({_committed(envelope.spent, envelope.reserved)})")
    return allow()


def trust_level(ctx: GateContext) -> GateResult:
    """An agent only runs on a gateway whose minimum trust level it meets."""
    agent, gateway = ctx.agent, ctx.gateway
    if agent is not None and gateway is not None and agent.trust_level < gateway.min_trust_level:
        return block("trust_level_insufficient", False,
                     f"agent {agent.name!r} has trust level {agent.trust_level}; gateway "
                     f"{gateway.name!r} requires {gateway.min_trust_level}")
    return allow()


def context_trust(ctx: GateContext) -> GateResult:
    """The execution context is trusted at least as far as the agent's role requires."""
    agent, trust = ctx.agent, ctx.context_trust
    if agent is None or trust is None or agent.role not in trust.required_by_role:
        return allow()
    required = trust.required_by_role[agent.role]
    if trust.level < required:
        return block("context_untrusted", False,
                     f"the execution context has trust level {trust.level}; role "
                     f"{agent.role!r} of agent {agent.name!r} requires {required}")
    return allow()


def policy_rules(ctx: GateContext) -> GateResult:
    """No blocking policy holds, and every policy can be checked (a broken one fails closed)."""
    scope = Scope(local=policy_scope(ctx))
    for rule in ctx.policies:
        holds, problem = rule_holds(rule, scope)
        if problem is not None:
            return block("policy_blocked", False,
                         f"policy {rule.name!r} cannot be checked, so the step is blocked: {problem}")
        if holds and rule.effect == "block":
            return block("policy_blocked", False, f"policy {rule.name!r} blocks this step: {_why(rule)}")
    return allow()


def approval_required(ctx: GateContext) -> GateResult:
    """A step that needs a person's OK, by configuration or by policy, waits for one."""
    if ctx.approval_granted:
        return allow()
    if ctx.approval_required:
        return hold("approval", f"step {ctx.step.step!r} needs a person's approval before it runs")
    scope = Scope(local=policy_scope(ctx))
    for rule in ctx.policies:
        if rule.effect != "require_approval":
            continue
        holds, problem = rule_holds(rule, scope)
        # Unreachable after policy_rules, but a gate run on its own must not fail open.
        if holds or problem is not None:
            return hold("policy", f"policy {rule.name!r} requires approval: {problem or _why(rule)}")
    return allow()


GATES: tuple[tuple[str, Gate], ...] = (
    ("gateway_health", gateway_health),
    ("agent_status", agent_status),
    ("concurrency", concurrency),
    ("rate_limit", rate_limit),
    ("budget_agent", budget_agent),
    ("budget_envelopes", budget_envelopes),
    ("trust_level", trust_level),
    ("context_trust", context_trust),
    ("policy_rules", policy_rules),
    ("approval_required", approval_required),
)


# -- the decision ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GovernanceDecision:
    """The outcome of governing one dispatch, stored and audited.

    Args:
        outcome: "allow", "block" or "hold".
        gate: the gate that blocked or held (None when allowed).
        code: the block's error code (None when allowed or held).
        retryable: whether a block may be retried after a backoff.
        message: why, for people.
        kind: what a hold waits for ("approval" or "policy").
        trail: (gate, outcome) for every gate evaluated, in order.
    """

    outcome: str
    gate: str | None = None
    code: str | None = None
    retryable: bool = False
    message: str = ""
    kind: str | None = None
    trail: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The decision as JSON-ready data (the trail as a list of [gate, outcome] pairs)."""
        return {"outcome": self.outcome, "gate": self.gate, "code": self.code,
                "retryable": self.retryable, "message": self.message, "kind": self.kind,
                "trail": [[name, outcome] for name, outcome in self.trail]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GovernanceDecision:
        """Rebuild a decision from `to_json` data."""
        return cls(outcome=data["outcome"], gate=data.get("gate"), code=data.get("code"),
                   retryable=bool(data.get("retryable", False)), message=data.get("message", ""),
                   kind=data.get("kind"),
                   trail=tuple((name, outcome) for name, outcome in data.get("trail", ())))


def evaluate(ctx: GateContext, *, gates: Sequence[tuple[str, Gate]] = GATES) -> GovernanceDecision:
    """Run the gates in order and stop at the first that blocks or holds.

    Args:
        ctx: the dispatch being governed.
        gates: the gates to run, in order (the ten of GATES unless a test says otherwise).

    Returns:
        The decision, with the trail of the gates that were evaluated.
    """
    trail: list[tuple[str, str]] = []
    for name, gate in gates:
        result = gate(ctx)
        trail.append((name, result.outcome))
        if result.outcome != ALLOW:
            return GovernanceDecision(outcome=result.outcome, gate=name, code=result.code,
                                      retryable=result.retryable, message=result.message,
                                      kind=result.kind, trail=tuple(trail))
    return GovernanceDecision(outcome=ALLOW, trail=tuple(trail))
