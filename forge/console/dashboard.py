"""What the dashboard shows a person: runs in flight, approvals waiting for them, runs per day by status over
the last DAYS days with their success rate, the workflows that failed recently, each budget's spend this
month, the spend and tokens (input and output) of this month, each gateway's measured health, and the kill
switch."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Max
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.timesince import timesince

from engine.interpreter.state import RunStatus
from forge.governance.spend import Spent, spent
from forge.governance.models import BudgetEnvelope, Gateway
from forge.governance.reservations import Ledger, month_start
from forge.runs.models import Approval, Run
from forge.accounts.roles import can
from forge.runs.selectors import approvals_for_user, runs_for_user
from forge.schedules.selectors import kill_switch

RECENT = 10
DAYS = 14
FAILED_SINCE_DAYS = 7
# Each day's bar, bottom to top: the class it is drawn with (lists.css) and the words of its legend.
SHARES = (("completed", "completed"), ("failed", "failed"), ("cancelled", "cancelled"), ("in_flight", "in flight"))
# The chart's grid: DAYS columns across CHART_W units, drawn as percentages of the card's width (the SVG has no
# viewBox, so its text stays at its size in px at any width); heights are px. TOP leaves room for each total.
CHART_W, CHART_H, BAR_W, TOP = 700, 120, 30, 14
BAR_PCT = round(100 * BAR_W / CHART_W, 3)


def _pct(units: float) -> float:
    return round(100 * units / CHART_W, 3)


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
class Piece:
    share: str  # completed, failed, cancelled or in_flight
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Day:
    day: date
    total: int
    pieces: list[Piece]
    x: float

    @property
    def x_pct(self) -> float:
        return _pct(self.x)

    @property
    def center_pct(self) -> float:
        return _pct(self.x + BAR_W / 2)

    @property
    def bar_pct(self) -> float:
        return BAR_PCT

    @property
    def top(self) -> float:
        """Where the day's total is written: just above its bar."""
        return min([p.y for p in self.pieces] + [CHART_H]) - 2

    @property
    def label(self) -> str:
        return ", ".join(f"{p.count} {dict(SHARES)[p.share]}" for p in self.pieces) or "no run"


@dataclass(frozen=True)
class Chart:
    days: list[Day]
    ended: int  # runs of these days that ended
    completed: int

    @property
    def success_pct(self) -> int | None:
        return round(100 * self.completed / self.ended) if self.ended else None


@dataclass(frozen=True)
class FailingWorkflow:
    name: str
    failures: int  # in the last FAILED_SINCE_DAYS days
    last_at: object  # when the last one ended
    last_run: Run


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


@dataclass(frozen=True)
class Board:
    in_flight: list[Run]
    approvals: list[Approval]
    chart: Chart
    failing: list[FailingWorkflow]
    budgets: list[Budget]
    month: Spent  # every call's cost and tokens since the month began (UTC)
    gateways: list[GatewayHealth]
    kill_switch: object
    may_switch: bool  # may engage or lift the kill switch


def budgets(now=None) -> list[Budget]:
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


def _share(status: str) -> str:
    return status if status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED) else "in_flight"


def chart(runs, today: date) -> Chart:
    """Runs created on each of the last DAYS days (UTC), stacked by how they stand, drawn to the busiest day."""
    first = today - timedelta(days=DAYS - 1)
    counts: dict[date, dict[str, int]] = {first + timedelta(days=n): {} for n in range(DAYS)}
    rows = (runs.filter(created_at__date__gte=first).annotate(day=TruncDate("created_at"))
            .values("day", "status").annotate(n=Count("id")))
    for row in rows:
        if row["day"] in counts:
            shares = counts[row["day"]]
            shares[_share(row["status"])] = shares.get(_share(row["status"]), 0) + row["n"]
    busiest = max([sum(shares.values()) for shares in counts.values()] + [1])
    scale = (CHART_H - TOP) / busiest
    days = []
    for n, (day, shares) in enumerate(counts.items()):
        pieces, bottom = [], CHART_H
        for share, _ in SHARES:
            if count := shares.get(share, 0):
                height = count * scale
                bottom -= height
                pieces.append(Piece(share, count, round(bottom, 2), round(height, 2)))
        days.append(Day(day, sum(shares.values()), pieces, n * CHART_W / DAYS + (CHART_W / DAYS - BAR_W) / 2))
    ended = sum(shares.get(s, 0) for shares in counts.values() for s in ("completed", "failed", "cancelled"))
    completed = sum(shares.get("completed", 0) for shares in counts.values())
    return Chart(days, ended, completed)


def failing(runs, since) -> list[FailingWorkflow]:
    """The workflows with a run that failed since `since`, the latest failure first."""
    failed = runs.filter(status=RunStatus.FAILED, finished_at__gte=since)
    per = failed.values("workflow_id").annotate(n=Count("id"), last_at=Max("finished_at")).order_by("-last_at")
    shown = []
    for row in per[:RECENT]:
        last = failed.filter(workflow_id=row["workflow_id"], finished_at=row["last_at"]).order_by("-id").first()
        shown.append(FailingWorkflow(last.workflow.name, row["n"], row["last_at"], last))
    return shown


def for_user(user) -> Board:
    runs = runs_for_user(user).select_related("workflow", "version", "started_by")
    now = timezone.now()
    return Board(
        in_flight=list(runs.exclude(status__in=RunStatus.TERMINAL).order_by("-id")[:RECENT]),
        approvals=approvals_for_user(user)[:RECENT],
        chart=chart(runs_for_user(user), now.date()),
        failing=failing(runs, now - timedelta(days=FAILED_SINCE_DAYS)),
        budgets=budgets(),
        month=spent(since=month_start(now)),
        gateways=gateways(now),
        kill_switch=kill_switch(),
        may_switch=can(user, "killswitch.set"),
    )
