"""What the governance gates look at for one dispatch of one step attempt.

The Django side fills these from its database; the engine only reads them.
A missing record (`agent=None`, no `gateways`) or an unset limit (`max_concurrency=None`)
means there is nothing to check, and the gate concerned allows. Policy rules
read the context through `policy_scope`, in the engine's expression language.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.expressions import EvaluationError, ExpressionError, Node, Scope, parse, paths
from engine.governance.routing import GatewayInfo, Route, route

POLICY_EFFECTS = ("block", "require_approval")


@dataclass(frozen=True, slots=True)
class StepInfo:
    """The step attempt being dispatched.

    Args:
        run_id: the run's id.
        step: the step's id in its workflow.
        attempt: the attempt number, from 1.
        agent: the name of the agent the step calls.
        workflow: the workflow's name.
        capabilities: capabilities the step requires.
        args: the run's arguments.
        estimated_cost: what this attempt is expected to cost, in the budget currency: the
            amount its dispatch reserves against every budget that covers it.
    """

    run_id: str
    step: str
    attempt: int
    agent: str
    workflow: str
    capabilities: tuple[str, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)
    estimated_cost: float = 0.0


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """The agent's registration and its current load and spend.

    Args:
        name: the agent's name.
        enabled: an admin's on/off switch.
        status: lifecycle status; only "active" may be dispatched to.
        role: the agent's role, which sets the context trust it needs.
        trust_level: how far the agent is trusted.
        max_concurrency: most steps it may run at once (None: no limit).
        running: steps it is running now.
        rate_limit_per_minute: most dispatches per minute (None: no limit).
        dispatches_last_minute: dispatches to it in the last 60 seconds.
        monthly_budget: its spending ceiling this month (None: no ceiling).
        month_spend: what it has spent this month.
        month_reserved: what its steps in flight have reserved this month and not yet spent.
        capabilities: what the agent's own settings say it can do; routing reads it when it has no gateway.
    """

    name: str
    enabled: bool = True
    status: str = "active"
    role: str = ""
    trust_level: int = 0
    max_concurrency: int | None = None
    running: int = 0
    rate_limit_per_minute: int | None = None
    dispatches_last_minute: int = 0
    monthly_budget: float | None = None
    month_spend: float = 0.0
    month_reserved: float = 0.0
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BudgetEnvelope:
    """A scoped budget: "org", "workflow:<name>" or "agent:<name>".

    Args:
        name: the envelope's name, shown to people.
        scope: what it covers.
        limit: its ceiling.
        spent: what has been charged to it so far.
        reserved: what steps in flight have reserved against it and not yet spent.
    """

    name: str
    scope: str
    limit: float
    spent: float
    reserved: float = 0.0


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """A dispatch policy: when `when` holds, block the step or ask a person first.

    Args:
        name: the policy's name, shown to people.
        when: an expression over `step`, `agent`, `gateway`, `args` and `run`.
        effect: "block" or "require_approval".
        message: why, in the admin's words.

    Raises:
        ValueError: on an unknown effect (ignoring it would let the step through).
    """

    name: str
    when: str
    effect: Literal["block", "require_approval"]
    message: str = ""

    def __post_init__(self):
        if self.effect not in POLICY_EFFECTS:
            raise ValueError(f"policy {self.name!r} has effect {self.effect!r}; "
                             f"expected one of {', '.join(POLICY_EFFECTS)}")


@dataclass(frozen=True, slots=True)
class ContextTrust:
    """How far the execution context is trusted, and what each agent role needs.

    Args:
        level: the context's trust level.
        required_by_role: the minimum context level per agent role; a role
            not listed needs nothing.
    """

    level: int
    required_by_role: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GateContext:
    """Everything the gates need for one dispatch of one step attempt.

    Args:
        step: the attempt being dispatched.
        gateways: the agent's gateways in its order of preference (empty: it has none); `route` picks one.
        agent: the agent's record (None: the agent is not registered).
        envelopes: budget envelopes; the gate picks those that apply.
        policies: dispatch policies, in the order they are checked.
        context_trust: the execution context's trust (None: not tracked).
        approval_required: the step or agent configuration demands a human OK.
        approval_granted: a person already approved a hold for this attempt.
    """

    step: StepInfo
    gateways: tuple[GatewayInfo, ...]
    agent: AgentInfo | None
    envelopes: tuple[BudgetEnvelope, ...] = ()
    policies: tuple[PolicyRule, ...] = ()
    context_trust: ContextTrust | None = None
    approval_required: bool = False
    approval_granted: bool = False

    @property
    def route(self) -> Route:
        """Which gateway takes the step, and why (engine.governance.routing)."""
        return route(self.gateways, self.step.capabilities, self.agent.capabilities if self.agent else ())

    @property
    def gateway(self) -> GatewayInfo | None:
        """The gateway routing picked (None: none covers the step healthily, or the agent has none)."""
        return self.route.gateway


# -- what policy expressions see ----------------------------------------------

# The names a policy can read. A misspelt field would read as null and quietly
# never match, so the checker rejects names outside this list.
POLICY_FIELDS: Mapping[str, frozenset[str] | None] = {
    "step": frozenset({"id", "attempt", "agent", "workflow", "capabilities", "estimated_cost"}),
    "agent": frozenset({"name", "role", "trust_level", "status", "month_spend", "monthly_budget"}),
    "gateway": frozenset({"name", "min_trust_level", "capabilities"}),
    "run": frozenset({"id"}),
    "args": None,  # the run's own arguments: any name
}


@functools.lru_cache(maxsize=1024)
def _compile(text: str) -> tuple[Node | None, str | None]:
    """A policy expression's tree, or why it cannot be used (cached, errors included)."""
    try:
        node = parse(text)
    except ExpressionError as exc:
        return None, str(exc)
    for path in paths(node):
        problem = _unknown_name(path.dollar, path.segments)
        if problem:
            return None, problem
    return node, None


def _unknown_name(dollar: bool, segments: tuple) -> str | None:
    root = segments[0]
    if dollar or root not in POLICY_FIELDS:
        return (f"{'$' if dollar else ''}{root!s} is not something a policy can read; "
                f"use {', '.join(sorted(POLICY_FIELDS))}")
    fields = POLICY_FIELDS[root]
    if fields is not None and len(segments) > 1 and segments[1] not in fields:
        return f"{root} has no field {segments[1]!r}; it has {', '.join(sorted(fields))}"
    return None


def check_policy_expression(text: str) -> str | None:
    """Validate a policy's `when` expression, as the console does when an admin saves it.

    Args:
        text: the expression.

    Returns:
        None if the gates can use it, else a message saying what is wrong.
    """
    return _compile(text)[1]


def _plain(value: Any) -> Any:
    # The expression language only treats dicts and lists as containers.
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def policy_scope(ctx: GateContext) -> dict[str, Any]:
    """The values a policy expression sees for this dispatch.

    Args:
        ctx: the dispatch being governed.

    Returns:
        Plain dicts under `step`, `agent`, `gateway` (the one routing picked), `args` and `run`; a
        missing agent or gateway record is null.
    """
    step, agent, gateway = ctx.step, ctx.agent, ctx.gateway
    return {
        "step": {"id": step.step, "attempt": step.attempt, "agent": step.agent,
                 "workflow": step.workflow, "capabilities": list(step.capabilities),
                 "estimated_cost": step.estimated_cost},
        "agent": None if agent is None else {
            "name": agent.name, "role": agent.role, "trust_level": agent.trust_level,
            "status": agent.status, "month_spend": agent.month_spend,
            "monthly_budget": agent.monthly_budget},
        "gateway": None if gateway is None else {
            "name": gateway.name, "min_trust_level": gateway.min_trust_level,
            "capabilities": list(gateway.capabilities)},
        "args": _plain(step.args),
        "run": {"id": step.run_id},
    }


def rule_holds(rule: PolicyRule, scope: Scope) -> tuple[bool, str | None]:
    """Check one policy's condition.

    Args:
        rule: the policy.
        scope: a Scope whose `local` is `policy_scope(ctx)`.

    Returns:
        (holds, None), or (False, why it cannot be checked) when the
        expression does not parse, names something policies cannot read, or
        fails while being evaluated.
    """
    node, problem = _compile(rule.when)
    if node is None:
        return False, problem
    try:
        return bool(node.evaluate(scope)), None
    except EvaluationError as exc:
        return False, str(exc)
