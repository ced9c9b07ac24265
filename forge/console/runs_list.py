"""What the runs list shows beyond its filters: the tabs with their counts, and for each run of the page its
duration, whether it waits for a person, and the actions the person may take on it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from engine.interpreter.state import RunStatus
from forge.accounts.roles import can
from forge.console.run_head import duration_text, run_again_url
from forge.runs.reads.run_view import held_words
from forge.runs.models import Approval, Run

# tab -> its words. "Running" and "Waiting for a person" do not overlap: a run in flight with a pending
# approval is waiting; every other run in flight is running.
TABS = {"": "All", "running": "Running", "waiting": "Waiting for a person", "failed": "Failed"}
_WAITING = Q(pk__in=Approval.objects.filter(status=Approval.PENDING).values("run_id"))
_IN_FLIGHT = Q(status__in=(RunStatus.PENDING, RunStatus.RUNNING))
_WHERE = {"running": _IN_FLIGHT & ~_WAITING, "waiting": _IN_FLIGHT & _WAITING,
          "failed": Q(status=RunStatus.FAILED)}


@dataclass(frozen=True)
class Tab:
    key: str
    words: str
    count: int


@dataclass(frozen=True)
class Row:
    run: Run
    duration: str
    waiting: bool  # for a person's decision
    run_again_url: str  # "" when the person may not start runs
    may_cancel: bool
    waiting_words: str = "waiting for a person"  # or, held before its first step, whose approval it waits for


def in_tab(runs, tab: str):
    return runs.filter(_WHERE[tab]) if tab else runs


def tabs(runs) -> list[Tab]:
    """Each tab with how many of `runs` (the list's other filters applied) it holds."""
    counts = runs.aggregate(all=Count("id"), **{key: Count("id", filter=where)
                                                for key, where in _WHERE.items()})
    return [Tab(key, words, counts[key or "all"]) for key, words in TABS.items()]


def rows(user, runs: list[Run]) -> list[Row]:
    now = timezone.now()
    waiting = set(Approval.objects.filter(status=Approval.PENDING, run__in=[r.pk for r in runs])
                  .values_list("run_id", flat=True))
    may_start, may_cancel = can(user, "run.start"), can(user, "run.cancel")
    held = held_words(waiting) if waiting else {}
    return [Row(run, duration_text(((run.finished_at or (run.progressed_at if run.finished else now))
                                     - (run.started_at or run.created_at)).total_seconds()),
                run.pk in waiting and not run.finished, run_again_url(run) if may_start else "",
                may_cancel and not run.finished, held.get(run.pk, "waiting for a person"))
            for run in runs]
