"""What the dashboard shows a person: runs in flight, approvals waiting for them, recent failures, each
budget's spend this month, and the kill switch."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from engine.interpreter.state import RunStatus
from forge.governance.models import BudgetEnvelope
from forge.governance.reservations import Ledger
from forge.runs.models import Approval, Run
from forge.runs.selectors import approvals_for_user, runs_for_user
from forge.schedules.selectors import kill_switch

RECENT = 10


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


@dataclass(frozen=True)
class Board:
    in_flight: list[Run]
    approvals: list[Approval]
    failures: list[Run]
    budgets: list[Budget]
    kill_switch: object


def budgets(now=None) -> list[Budget]:
    envelopes = list(BudgetEnvelope.objects.filter(enabled=True).order_by("name", "pk"))
    figures = Ledger.open(now or timezone.now(), envelopes, (), lock=False).envelopes
    return [Budget(e.name, e.scope, float(e.limit), *map(float, figures[e.pk])) for e in envelopes]


def for_user(user) -> Board:
    runs = runs_for_user(user).select_related("workflow", "version", "started_by")
    week_ago = timezone.now() - timedelta(days=7)
    return Board(
        in_flight=list(runs.exclude(status__in=RunStatus.TERMINAL).order_by("-id")[:RECENT]),
        approvals=approvals_for_user(user)[:RECENT],
        failures=list(runs.filter(status=RunStatus.FAILED, finished_at__gte=week_ago).order_by("-finished_at")[:RECENT]),
        budgets=budgets(),
        kill_switch=kill_switch(),
    )
