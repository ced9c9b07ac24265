"""The dashboard's read model, for every client: what a person's board holds. Runs in flight and approvals
waiting for them, runs per day by how they stand over the last DAYS days (UTC), the workflows that failed
recently, each budget's figures this month, the month's spend and tokens, each gateway's measured health, and
the kill switch. Runs and approvals are the ones the person may see (runs_for_user, approvals_for_user); how
the board is drawn is the client's (the console: forge/console/dashboard.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Max
from django.db.models.functions import TruncDate
from django.utils import timezone

from engine.interpreter.state import RunStatus
from forge.accounts.roles import can
from forge.governance.reservations import month_start
from forge.governance.spend import Spent, spent
from forge.governance.standing import Budget, GatewayHealth, budgets, gateways
from forge.runs.models import Approval, Run
from forge.runs.selectors import approvals_for_user, runs_for_user
from forge.schedules.selectors import kill_switch

RECENT = 10  # runs in flight, approvals and failing workflows listed
DAYS = 14
FAILED_SINCE_DAYS = 7
# How a run stands on a day's count: its end, or still in flight (any status not ended).
SHARES = ("completed", "failed", "cancelled", "in_flight")
ENDED = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class DayCount:
    day: date
    counts: dict[str, int]  # share (SHARES) -> runs created that day standing so; a share with none is absent

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class RunsPerDay:
    days: list[DayCount]  # DAYS of them, oldest first, today last

    @property
    def ended(self) -> int:
        """Runs of these days that ended."""
        return sum(d.counts.get(s, 0) for d in self.days for s in ENDED)

    @property
    def completed(self) -> int:
        return sum(d.counts.get("completed", 0) for d in self.days)

    @property
    def success_pct(self) -> int | None:
        """Of the runs that ended, the share that completed; None when none ended."""
        return round(100 * self.completed / self.ended) if self.ended else None


@dataclass(frozen=True)
class FailingWorkflow:
    name: str
    failures: int  # in the last FAILED_SINCE_DAYS days
    last_at: datetime  # when the last one ended
    last_run: Run


@dataclass(frozen=True)
class Board:
    in_flight: list[Run]
    approvals: list[Approval]
    per_day: RunsPerDay
    failing: list[FailingWorkflow]
    budgets: list[Budget]
    month: Spent  # every call's cost and tokens since the month began (UTC)
    gateways: list[GatewayHealth]
    kill_switch: object
    may_switch: bool  # may engage or lift the kill switch


def share_of(status: str) -> str:
    return status if status in ENDED else "in_flight"


def runs_per_day(runs, today: date) -> RunsPerDay:
    """`runs` created on each of the DAYS days up to `today` (UTC), counted by how they stand."""
    first = today - timedelta(days=DAYS - 1)
    counts: dict[date, dict[str, int]] = {first + timedelta(days=n): {} for n in range(DAYS)}
    rows = (runs.filter(created_at__date__gte=first).annotate(day=TruncDate("created_at"))
            .values("day", "status").annotate(n=Count("id")))
    for row in rows:
        if row["day"] in counts:
            shares = counts[row["day"]]
            shares[share_of(row["status"])] = shares.get(share_of(row["status"]), 0) + row["n"]
    return RunsPerDay([DayCount(day, {s: shares[s] for s in SHARES if shares.get(s)})
                       for day, shares in counts.items()])


def failing(runs, since: datetime) -> list[FailingWorkflow]:
    """The workflows with one of `runs` failed since `since`, the latest failure first."""
    failed = runs.filter(status=RunStatus.FAILED, finished_at__gte=since)
    per = failed.values("workflow_id").annotate(n=Count("id"), last_at=Max("finished_at")).order_by("-last_at")
    shown = []
    for row in per[:RECENT]:
        last = (failed.select_related("workflow").filter(workflow_id=row["workflow_id"], finished_at=row["last_at"])
                .order_by("-id").first())
        shown.append(FailingWorkflow(last.workflow.name, row["n"], row["last_at"], last))
    return shown


def board_for(user, now: datetime | None = None) -> Board:
    """`user`'s board: the runs and approvals they may see, and the installation's governance figures."""
    now = now or timezone.now()
    runs = runs_for_user(user)
    return Board(
        in_flight=list(runs.select_related("workflow", "version", "started_by")
                       .exclude(status__in=RunStatus.TERMINAL).order_by("-id")[:RECENT]),
        approvals=approvals_for_user(user)[:RECENT],
        per_day=runs_per_day(runs, now.date()),
        failing=failing(runs, now - timedelta(days=FAILED_SINCE_DAYS)),
        budgets=budgets(now),
        month=spent(since=month_start(now)),
        gateways=gateways(now),
        kill_switch=kill_switch(),
        may_switch=can(user, "killswitch.set"),
    )
