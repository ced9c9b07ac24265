"""Reservations: a dispatch holds its projected cost against every budget that covers it until its result.

Cost used to be counted only once a step ended, so concurrent dispatches all
saw the same spend and together went over a budget. Now each allowed
dispatch of a budgeted step writes its call's TokenEvent at once, holding
the projected cost in `reserved`; its result settles the row to the real
tokens and cost, and an attempt stopped without one (cancelled, timed out,
crash loop) releases it. A budget's figure is spend plus open reservations,
read under row locks on the envelopes and agents concerned (`Ledger.open`),
so a budget is exceeded by at most a step's own misestimate, never by
concurrency.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Q, Sum

from forge.governance.models import Agent, BudgetEnvelope, TokenEvent, model_price, spend_bounds


def _amount(value) -> float:
    """A usable amount of money: a finite number of at least 0; anything else counts as nothing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0.0
    return max(0.0, float(value))


def price_bound(config: dict) -> float:
    """An openai agent's most expensive call: its `max_tokens` at the higher of its model's two prices (the
    config's `price_per_million`, else the list price); 0.0 when either is missing, or malformed (refused on
    save, but a row can be written around the checks)."""
    if not config.get("max_tokens") or any(spend_bounds(config)) or (price := model_price(config)) is None:
        return 0.0
    return config["max_tokens"] * max(price) / 1e6


def projected_cost(agent: Agent | None, spec) -> float:
    """What one call of the step `spec` by `agent` (as its run pinned it: forge.runs.pinning, whose config
    carries the pinned prices) is expected to cost: the largest of the step's
    `estimated_cost`, the agent's `estimated_cost`, the mock's `cost` (mock agent) and the price bound (openai
    agent; a step's `agent_config.model` at its list price too). A workflow can raise what its admin configured,
    never lower it."""
    figures = [_amount(spec.estimated_cost)]
    if agent is not None:
        figures.append(_amount(agent.estimated_cost))
        if agent.provider == "mock" and spec.mock is not None:
            figures.append(_amount(spec.mock.cost))
        elif agent.provider == "openai" and isinstance(agent.config, dict):
            figures.append(price_bound(agent.config))
            overlay = spec.agent_config if getattr(agent, "name", spec.agent) == spec.agent else None  # not a fix's
            if overlay is not None and overlay.model:  # a step's own model, priced as the openai agent prices it
                tokens = overlay.max_tokens or agent.config.get("max_tokens")
                figures.append(price_bound({"model": overlay.model, "max_tokens": tokens}))
    return max(figures)


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _scope_filter(envelope: BudgetEnvelope, now: datetime) -> Q:
    kind, _, name = envelope.scope.partition(":")
    q = Q()
    if kind == "workflow":
        q &= Q(workflow=name)
    elif kind == "agent":
        q &= Q(agent=name)
    if envelope.monthly:
        q &= Q(at__gte=month_start(now))
    return q


@dataclass
class Ledger:
    """Spend and open reservations of the budgets one round may touch, read under their locks.

    `envelopes` maps an envelope's id, `agents` an agent's name (its monthly
    budget), to [spent, reserved]; the round adds what its own dispatches
    reserve, since the locks keep every other round out until it commits.
    """

    envelopes: dict[int, list[float]] = field(default_factory=dict)
    agents: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def open(cls, now: datetime, envelopes: Iterable[BudgetEnvelope], agents: Iterable[Agent], *,
             lock: bool = True) -> Ledger:
        """Lock the rows (in one order everywhere: envelopes, then agents, each by id, so two rounds never
        deadlock), then read their figures. SQLite needs no row lock: a round is an IMMEDIATE transaction,
        which already holds the database's write lock for these reads. `lock=False` only reads, for a check
        that reserves nothing (a schedule's budget guard), so it never waits on a round nor makes one wait."""
        envelopes = sorted(envelopes, key=lambda e: e.pk)
        agents = sorted(agents, key=lambda a: a.pk)
        if lock and connection.features.has_select_for_update:
            for model, rows in ((BudgetEnvelope, envelopes), (Agent, agents)):
                if rows:
                    list(model.objects.select_for_update().filter(pk__in=[r.pk for r in rows])
                         .order_by("pk").values_list("pk", flat=True))
        figures: dict[str, Sum] = {}
        for envelope in envelopes:
            scope = _scope_filter(envelope, now)
            figures[f"e{envelope.pk}_spent"] = Sum("cost", filter=scope or None)
            figures[f"e{envelope.pk}_reserved"] = Sum("reserved", filter=scope or None)
        budgeted = [a for a in agents if a.monthly_budget is not None]
        for agent in budgeted:
            scope = Q(agent=agent.name, at__gte=month_start(now))
            figures[f"a{agent.pk}_spent"] = Sum("cost", filter=scope)
            figures[f"a{agent.pk}_reserved"] = Sum("reserved", filter=scope)
        totals = TokenEvent.objects.aggregate(**figures) if figures else {}

        def pair(key: str) -> list[float]:
            return [float(totals[f"{key}_spent"] or 0.0), float(totals[f"{key}_reserved"] or 0.0)]

        return cls(envelopes={e.pk: pair(f"e{e.pk}") for e in envelopes},
                   agents={a.name: pair(f"a{a.pk}") for a in budgeted})

    def hold(self, envelopes: Iterable[BudgetEnvelope], agent: str, amount: float) -> None:
        """Count a reservation this round made, for its later dispatches."""
        for envelope in envelopes:
            self.envelopes[envelope.pk][1] += amount
        if agent in self.agents:
            self.agents[agent][1] += amount


def reserve(*, run_id: int, workflow: str, agent: str, step: str, attempt: int, iteration: int, amount: float,
            at) -> None:
    """Open the call's TokenEvent with its projected cost (a call dispatched again keeps its first one)."""
    TokenEvent.objects.bulk_create([TokenEvent(
        at=at, run_id=run_id, step=step, attempt=attempt, iteration=iteration, agent=agent, workflow=workflow,
        reserved=amount, settled=False)], ignore_conflicts=True)


def _table() -> str:
    return connection.ops.quote_name(TokenEvent._meta.db_table)


_SETTLE_COLUMNS = ("at", "run_id", "step", "attempt", "iteration", "agent", "workflow", "tokens", "input_tokens",
                   "output_tokens", "model", "cost", "reserved", "settled")


def settle(*, run_id: int, workflow: str, agent: str, step: str, attempt: int, iteration: int, tokens: int,
           cost: float, at, input_tokens: int = 0, output_tokens: int = 0, model: str = "") -> None:
    """Record what one call spent, once: the first report of a cost settles its reservation (or opens its
    row), and any later report of the same call changes nothing. A report of nothing spent (a timeout the
    runtime declared, say) records nothing, so the call's real report still counts. No row count is read:
    this runs inside a round's pipeline."""
    tokens, cost = max(0, int(tokens)), _amount(cost)
    if not tokens and not cost:
        return
    table, q = _table(), connection.ops.quote_name
    columns = ", ".join(q(name) for name in _SETTLE_COLUMNS)
    sql = (f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(_SETTLE_COLUMNS))}) "
           f"ON CONFLICT ({q('run_id')}, {q('step')}, {q('attempt')}, {q('iteration')}) DO UPDATE SET "
           f"{q('at')} = excluded.{q('at')}, {q('tokens')} = excluded.{q('tokens')}, "
           f"{q('input_tokens')} = excluded.{q('input_tokens')}, {q('output_tokens')} = excluded.{q('output_tokens')}, "
           f"{q('model')} = excluded.{q('model')}, "
           f"{q('cost')} = excluded.{q('cost')}, {q('reserved')} = 0, {q('settled')} = excluded.{q('settled')} "
           f"WHERE NOT {table}.{q('settled')}")
    params = [connection.ops.adapt_datetimefield_value(at), run_id, step, attempt, iteration, agent, workflow,
              tokens, max(0, int(input_tokens)), max(0, int(output_tokens)), (model or "")[:128], cost, 0.0, True]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def release(run_id: int, step: str | None = None, attempt: int | None = None, iteration: int | None = None) -> None:
    """Stop holding the reservation of an attempt that ended without a cost (of every call of the run when no
    step is given). The row stays open, so a result that still arrives is recorded."""
    calls = TokenEvent.objects.filter(run_id=run_id, settled=False, reserved__gt=0)
    if step is not None:
        calls = calls.filter(step=step, attempt=attempt)
    if iteration is not None:
        calls = calls.filter(iteration=iteration)
    calls.update(reserved=0.0)
