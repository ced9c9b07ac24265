"""What the list pages' live socket compares: a small signature of each topic, read for one person.

A page re-reads itself only when its topic's signature changes, so a busy run's step events do not make
every open runs list fetch again.
"""

from __future__ import annotations

from django.db.models import Max

from forge.accounts.roles import can
from forge.live import APPROVALS, RUNS
from forge.runs.models import RunStatus
from forge.runs.selectors import approvals_for_user, runs_for_user

TOPICS = (RUNS, APPROVALS)  # each the name of the group its wake-ups go to


def may_watch_pages(user) -> bool:
    return user is not None and user.is_authenticated and can(user, "run.view")


def signature(user, topic: str) -> tuple:
    """Changes when a run is created or changes status (RUNS), or when the approvals `user` may decide do."""
    if topic == APPROVALS:
        return tuple(approval.pk for approval in approvals_for_user(user))
    runs = runs_for_user(user)
    newest = runs.aggregate(newest=Max("id"))["newest"]
    moving = runs.exclude(status__in=RunStatus.TERMINAL).order_by("id").values_list("id", "status")
    return newest, tuple(moving)
