"""What was spent, read from the calls' ledger (TokenEvent: one row a call, its cost and tokens, the model that
answered): the totals of a period, and the same grouped by workflow, agent, model or month. The dashboard shows
this month's; the Spend page (forge/console/views/spend.py) groups a range of months.

A grouping shows its TOP groups by cost and one row summing the rest: a gateway may name a new model on every
call, and a page must not grow with them. The database sums and orders the groups and returns only the top
ones; one more aggregate sums the rest. Months are not cut: each call's `at` is the server's clock when the call
was recorded, so there is one month a month the ledger has run, whatever the range asked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncMonth

from forge.governance.models import TokenEvent

GROUPS = ("workflow", "agent", "model", "month")  # what the Spend page groups by, in its order
TOP = 20  # the groups a grouping shows by name, the costliest first; the rest are summed in one row


@dataclass(frozen=True)
class Spent:
    label: str  # the workflow, agent, model or month ("2026-11") it sums; "" for a total
    cost: float
    tokens: int
    input_tokens: int
    output_tokens: int
    calls: int
    others: int = 0  # on the row summing the groups past the top: how many it sums

    @property
    def split(self) -> bool:
        """Some of its calls' agents said how their tokens divide between input and output."""
        return bool(self.input_tokens or self.output_tokens)


SUMS = {"cost": Sum("cost"), "tokens": Sum("tokens"), "input_tokens": Sum("input_tokens"),
        "output_tokens": Sum("output_tokens"), "calls": Count("id")}


def calls(since: datetime | None = None, until: datetime | None = None) -> QuerySet:
    """The calls made from `since` (included) to before `until`."""
    q = Q()
    if since is not None:
        q &= Q(at__gte=since)
    if until is not None:
        q &= Q(at__lt=until)
    return TokenEvent.objects.filter(q)


def _spent(label: str, row: dict, others: int = 0) -> Spent:
    return Spent(label, float(row["cost"] or 0), int(row["tokens"] or 0), int(row["input_tokens"] or 0),
                 int(row["output_tokens"] or 0), int(row["calls"] or 0), others)


def spent(since: datetime | None = None, until: datetime | None = None) -> Spent:
    return _spent("", calls(since, until).aggregate(**SUMS))


def grouped(by: str, since: datetime | None = None, until: datetime | None = None) -> list[Spent]:
    """The TOP workflows', agents' or models' spend, the largest first, then (when there are more) one row
    summing the others; or each month's, the latest first."""
    rows = calls(since, until).order_by()
    if by == "month":
        rows = rows.annotate(month=TruncMonth("at")).values("month").annotate(**SUMS).order_by("-month")
        return [_spent(row["month"].strftime("%Y-%m"), row) for row in rows]
    if by not in GROUPS:
        raise ValueError(f"spend is grouped by one of {', '.join(GROUPS)}")
    shown = [_spent(row[by], row) for row in rows.values(by).annotate(**SUMS).order_by("-cost", by)[:TOP + 1]]
    if len(shown) <= TOP:
        return shown
    shown = shown[:TOP]
    rest = rows.exclude(**{f"{by}__in": [g.label for g in shown]}).aggregate(**SUMS, groups=Count(by, distinct=True))
    return [*shown, _spent("", rest, others=rest["groups"])]
