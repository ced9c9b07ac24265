"""Builds the engine's GateContext for one dispatch from the database.

Configuration (agents, gateways, policies, envelopes) changes rarely and is
read on every dispatch, so each process keeps one snapshot of it: a save or
delete in this process drops it at once, and a change made by another
process (the console, another cluster) is seen within
FORGE_GOVERNANCE_REFRESH_S. Load and spend are read live per dispatch, and
only for agents and envelopes that set a limit.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Sum
from django.db.models.signals import post_delete, post_save

from engine.governance import context as gc
from engine.interpreter.commands import Dispatch
from engine.interpreter.state import StepStatus
from forge.audit.models import AuditEvent
from forge.governance.models import Agent, BudgetEnvelope, Gateway, Policy, TokenEvent

ALLOWED = "forge.governance.allowed"


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
            agents={a.name: a for a in Agent.objects.select_related("gateway")},
            policies=tuple(gc.PolicyRule(p.name, p.when, p.effect, p.message)
                           for p in Policy.objects.filter(enabled=True)),
            envelopes=tuple(BudgetEnvelope.objects.filter(enabled=True)),
            loaded_at=loaded_at)
        _snapshot = fresh
    return fresh


def forget_configuration(**_kwargs) -> None:
    global _snapshot
    _snapshot = None


for _model in (Agent, Gateway, Policy, BudgetEnvelope):
    post_save.connect(forget_configuration, sender=_model, dispatch_uid=f"governance-{_model.__name__}-saved")
    post_delete.connect(forget_configuration, sender=_model, dispatch_uid=f"governance-{_model.__name__}-deleted")


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


class GovernanceView:
    """What the gates see during one round; `running` counts dispatches this round has not written yet."""

    def __init__(self, now: datetime):
        self.now = now
        self.config = configuration()
        self.running: Counter[str] = Counter()
        self.dispatched: Counter[str] = Counter()

    def agent(self, name: str) -> Agent | None:
        return self.config.agents.get(name)

    def envelopes(self, workflow: str, agent: str) -> tuple[gc.BudgetEnvelope, ...]:
        scopes = {"org", f"workflow:{workflow}", f"agent:{agent}"}
        return tuple(gc.BudgetEnvelope(e.name, e.scope, e.limit, self._spent(e))
                     for e in self.config.envelopes if e.scope in scopes)

    def _spent(self, envelope: BudgetEnvelope) -> float:
        events = TokenEvent.objects.all()
        kind, _, name = envelope.scope.partition(":")
        if kind == "workflow":
            events = events.filter(workflow=name)
        elif kind == "agent":
            events = events.filter(agent=name)
        if envelope.monthly:
            events = events.filter(at__gte=month_start(self.now))
        return float(events.aggregate(total=Sum("cost"))["total"] or 0.0)

    def context(self, *, run, workflow: str, dispatch: Dispatch, capabilities: tuple[str, ...]) -> gc.GateContext:
        from forge.runs.models import StepResult

        agent = self.agent(dispatch.agent)
        agent_info = gateway_info = None
        if agent is not None:
            running = dispatches = 0
            if agent.max_concurrency is not None:
                running = StepResult.objects.filter(agent=agent.name, status=StepStatus.RUNNING).count()
            if agent.rate_limit_per_minute is not None:
                dispatches = AuditEvent.objects.filter(code=ALLOWED, target=f"agent:{agent.name}",
                                                       at__gte=self.now - timedelta(minutes=1)).count()
            spend = 0.0
            if agent.monthly_budget is not None:
                spend = float(TokenEvent.objects.filter(agent=agent.name, at__gte=month_start(self.now))
                              .aggregate(total=Sum("cost"))["total"] or 0.0)
            agent_info = gc.AgentInfo(
                name=agent.name, enabled=agent.enabled, status=agent.status, role=agent.role,
                trust_level=agent.trust_level, max_concurrency=agent.max_concurrency,
                running=running + self.running[agent.name], rate_limit_per_minute=agent.rate_limit_per_minute,
                dispatches_last_minute=dispatches + self.dispatched[agent.name],
                monthly_budget=agent.monthly_budget, month_spend=spend)
            if agent.gateway is not None:
                gw = agent.gateway
                gateway_info = gc.GatewayInfo(gw.name, gw.healthy, gw.min_trust_level, tuple(gw.capabilities))
        step = gc.StepInfo(run_id=str(run.pk), step=dispatch.step, attempt=dispatch.attempt, agent=dispatch.agent,
                           workflow=workflow, capabilities=capabilities, args=run.args,
                           estimated_cost=agent.estimated_cost if agent else 0.0)
        trust = None
        if agent is not None and agent.required_context_trust:
            trust = gc.ContextTrust(run.context_trust, {agent.role: agent.required_context_trust})
        return gc.GateContext(
            step=step, gateway=gateway_info, agent=agent_info,
            envelopes=self.envelopes(workflow, dispatch.agent), policies=self.config.policies, context_trust=trust,
            approval_required=bool(agent and agent.requires_approval),
            approval_granted=dispatch.governance_approved)
