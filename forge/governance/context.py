"""Builds the engine's GateContext for one dispatch from the database.

Configuration (agents, gateways, policies, envelopes) changes rarely and is
read on every dispatch, so each process keeps one snapshot of it: a save or
delete in this process drops it at once, and a change made by another
process (the console, another cluster) is seen within
FORGE_GOVERNANCE_REFRESH_S. Load and spend are read live, under locks, and
only for agents and envelopes that set a limit.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models.signals import post_delete, post_save

from engine.governance import context as gc
from engine.interpreter.commands import Dispatch
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.governance import reservations
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy


@dataclass(frozen=True)
class Snapshot:
    agents: dict[str, Agent]
    policies: tuple[gc.PolicyRule, ...]
    envelopes: tuple[BudgetEnvelope, ...]
    loaded_at: float


_snapshot: Snapshot | None = None
_snapshot_lock = threading.Lock()


def configuration() -> Snapshot:
    """The governance configuration this process dispatches with (see the module's docstring)."""
    global _snapshot
    current = _snapshot
    if current is not None and time.monotonic() - current.loaded_at < settings.FORGE_GOVERNANCE_REFRESH_S:
        return current
    with _snapshot_lock:
        loaded_at = time.monotonic()
        fresh = Snapshot(
            agents={a.name: a for a in Agent.objects.prefetch_related("routes__gateway")},
            policies=tuple(gc.PolicyRule(p.name, p.when, p.effect, p.message)
                           for p in Policy.objects.filter(enabled=True)),
            envelopes=tuple(BudgetEnvelope.objects.filter(enabled=True)),
            loaded_at=loaded_at)
        _snapshot = fresh
    return fresh


def forget_configuration(**_kwargs) -> None:
    global _snapshot
    _snapshot = None


for _model in (Agent, AgentGateway, Gateway, Policy, BudgetEnvelope):
    post_save.connect(forget_configuration, sender=_model, dispatch_uid=f"governance-{_model.__name__}-saved")
    post_delete.connect(forget_configuration, sender=_model, dispatch_uid=f"governance-{_model.__name__}-deleted")


def _names(value) -> tuple[str, ...]:
    """A list of capability names from a JSON field; anything else (a row saved without validation) is none."""
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def gateway_info(gateway: Gateway) -> gc.GatewayInfo:
    return gc.GatewayInfo(gateway.name, gateway.healthy, gateway.min_trust_level, _names(gateway.capabilities))


def gateway_names(agent) -> tuple[str, ...]:
    """An agent's gateways, in order: a run's pinned list (forge.runs.pinning) or a live row's."""
    if agent is None:
        return ()
    names = getattr(agent, "gateways", None)
    if isinstance(names, tuple):  # pinned
        return names
    return tuple(route.gateway.name for route in agent.routes.all())


class GovernanceView:
    """What the gates see during one round.

    `running` and `dispatched` count this round's allowed dispatches, which
    it has not written yet. The first dispatch that a limit governs opens
    the round's `ledger`: it locks every limited envelope and agent the
    workflow can reach and reads their spend, so the round's later
    dispatches and its reservations need no other lock (see reservations).
    """

    def __init__(self, now: datetime):
        self.now = now
        self.config = configuration()
        self.running: Counter[str] = Counter()
        self.dispatched: Counter[str] = Counter()
        self.ledger: reservations.Ledger | None = None
        self.gateway_rows: dict[str, Gateway] = {}

    def agent(self, name: str) -> Agent | None:
        return self.config.agents.get(name)

    def envelopes(self, workflow: str, agent: str) -> list[BudgetEnvelope]:
        """The enabled envelopes that cover a step of `agent` in `workflow`."""
        scopes = ("org", f"workflow:{workflow}", f"agent:{agent}")
        return [e for e in self.config.envelopes if e.scope in scopes]

    def budgeted(self, workflow: str, agent: str) -> bool:
        """Whether any budget covers a step of `agent` in `workflow`: only then is its cost reserved."""
        record = self.agent(agent)
        return (record is not None and record.monthly_budget is not None) or bool(self.envelopes(workflow, agent))

    def limited(self, workflow: str, agent: str) -> bool:
        """Whether a dispatch to `agent` must read figures that another round could change at the same time."""
        record = self.agent(agent)
        return self.budgeted(workflow, agent) or (record is not None and (
            record.max_concurrency is not None or record.rate_limit_per_minute is not None))

    def open_ledger(self, workflow: str, agents: Iterable[str]) -> None:
        """Lock and read every limit that a dispatch of this round may meet: all at once, in one order."""
        if self.ledger is not None:
            return
        names = set(agents)
        limited = [a for name in sorted(names) if (a := self.agent(name)) is not None and self.limited(workflow, name)]
        scopes = {"org", f"workflow:{workflow}", *(f"agent:{name}" for name in names)}
        self.ledger = reservations.Ledger.open(self.now, [e for e in self.config.envelopes if e.scope in scopes],
                                               limited)

    def gateways(self, names: Iterable[str]) -> tuple[gc.GatewayInfo, ...]:
        """The named gateways as measured now (read once a round), in the given order; a deleted one is left
        out. Their health is never taken from the snapshot: a probe changes it without a save."""
        names = list(names)
        if missing := [name for name in names if name not in self.gateway_rows]:
            self.gateway_rows.update((g.name, g) for g in Gateway.objects.filter(name__in=missing))
        return tuple(gateway_info(self.gateway_rows[name]) for name in names if name in self.gateway_rows)

    def context(self, *, run, workflow: str, dispatch: Dispatch, capabilities: tuple[str, ...], running: int,
                estimated_cost: float, gateways: tuple[str, ...] = ()) -> gc.GateContext:
        """The gates' view of one dispatch; `running` is what the agent runs now, this round's dispatches
        included, `gateways` the names of the agent's gateways in order (as the run pinned them), and the
        ledger is open if the dispatch is `limited`."""
        agent = self.agent(dispatch.agent)
        ledger = self.ledger
        agent_info = None
        if agent is not None:
            dispatches = 0
            if agent.rate_limit_per_minute is not None:
                dispatches = AuditEvent.objects.filter(code=codes.GOVERNANCE_ALLOWED, target=f"agent:{agent.name}",
                                                       at__gte=self.now - timedelta(minutes=1)).count()
            spent, reserved = ledger.agents[agent.name] if ledger and agent.name in ledger.agents else (0.0, 0.0)
            agent_info = gc.AgentInfo(
                name=agent.name, enabled=agent.enabled, status=agent.status, role=agent.role,
                trust_level=agent.trust_level, max_concurrency=agent.max_concurrency,
                running=running, rate_limit_per_minute=agent.rate_limit_per_minute,
                dispatches_last_minute=dispatches + self.dispatched[agent.name],
                monthly_budget=agent.monthly_budget, month_spend=spent, month_reserved=reserved,
                capabilities=_names(agent.config.get("capabilities") if isinstance(agent.config, dict) else None))
        step = gc.StepInfo(run_id=str(run.pk), step=dispatch.step, attempt=dispatch.attempt, agent=dispatch.agent,
                           workflow=workflow, capabilities=capabilities, args=run.args,
                           estimated_cost=estimated_cost)
        trust = None
        if agent is not None and agent.required_context_trust:
            trust = gc.ContextTrust(run.context_trust, {agent.role: agent.required_context_trust})
        envelopes = tuple(gc.BudgetEnvelope(e.name, e.scope, e.limit, *ledger.envelopes[e.pk])
                          for e in self.envelopes(workflow, dispatch.agent))
        return gc.GateContext(
            step=step, gateways=self.gateways(gateways), agent=agent_info, envelopes=envelopes, policies=self.config.policies,
            context_trust=trust, approval_required=bool(agent and agent.requires_approval),
            approval_granted=dispatch.governance_approved)

    def reserve(self, *, run_id: int, workflow: str, dispatch: Dispatch, amount: float) -> None:
        """Hold an allowed dispatch's projected cost against the budgets that cover it."""
        if amount <= 0 or not self.budgeted(workflow, dispatch.agent):
            return
        reservations.reserve(run_id=run_id, workflow=workflow, agent=dispatch.agent, step=dispatch.step,
                             attempt=dispatch.attempt, iteration=dispatch.iteration, amount=amount, at=self.now)
        self.ledger.hold(self.envelopes(workflow, dispatch.agent), dispatch.agent, amount)
