"""How governance stands now, as every client shows it (the console's dashboard first): each enabled budget's
spend and open reservations this month, and each gateway's health as the runtime last measured it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.timesince import timesince

from forge.governance.models import BudgetEnvelope, Gateway
from forge.governance.reservations import Ledger


@dataclass(frozen=True)
class Budget:
    name: str
    scope: str
    limit: float
    spent: float
    reserved: float

    @property
    def spent_pct(self) -> float:
        return min(100.0, 100 * self.spent / self.limit) if self.limit else 100.0

    @property
    def reserved_pct(self) -> float:
        return min(100.0 - self.spent_pct, 100 * self.reserved / self.limit) if self.limit else 0.0

    @property
    def used_up(self) -> bool:
        """At or over its limit, open reservations included: what refuses a schedule's run."""
        return self.spent + self.reserved >= self.limit


@dataclass(frozen=True)
class GatewayHealth:
    """A gateway as the runtime last measured it (its probe and its real dispatches)."""

    name: str
    healthy: bool
    checked_at: datetime | None  # None: never checked
    checked: str  # when, in words: "never checked", "checked 20 s ago", "checked 3 minutes ago"
    last_error: str
    failures: int  # connection failures in a row
    capabilities: list[str]


def budgets(now: datetime | None = None) -> list[Budget]:
    """Every enabled budget by name, with what its month (UTC) has spent and holds reserved."""
    envelopes = list(BudgetEnvelope.objects.filter(enabled=True).order_by("name", "pk"))
    figures = Ledger.open(now or timezone.now(), envelopes, (), lock=False).envelopes
    return [Budget(e.name, e.scope, float(e.limit), *map(float, figures[e.pk])) for e in envelopes]


def checked_words(checked_at: datetime | None, now: datetime) -> str:
    if checked_at is None:
        return "never checked"
    seconds = (now - checked_at).total_seconds()
    if seconds < 60:
        return f"checked {max(0, int(seconds))} s ago"
    return f"checked {timesince(checked_at, now)} ago"


def gateways(now: datetime) -> list[GatewayHealth]:
    return [GatewayHealth(g.name, g.healthy, g.checked_at, checked_words(g.checked_at, now), g.last_error,
                          g.failures, [str(c) for c in g.capabilities] if isinstance(g.capabilities, list) else [])
            for g in Gateway.objects.order_by("name")]
