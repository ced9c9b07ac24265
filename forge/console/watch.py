"""What the list pages' live socket compares, and what it sends: a small signature of each topic, read for
one person, and the fragment htmx's ws extension swaps in when one changed.

A page re-reads itself only when a topic it lists changes, so a busy run's step events do not make every open
runs list fetch again. The fragment is the top bar's badge (every page watches approvals for it) and, for a
page that lists a topic that changed, an element that makes htmx read the page again and swap in its parts
marked hx-swap-oob (the runs table, the dashboard's cards, the inbox).
"""

from __future__ import annotations

from django.db.models import Max
from django.utils.html import format_html

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


# hx-get "" reads the page's own address again; swap "none" leaves the page as it is but for the parts the
# answer marks hx-swap-oob; a newer read replaces one still on its way (body:replace), so an older answer
# never lands last. It replaces the page's empty #live-refresh (base.html), and runs as soon as htmx has placed it.
REFRESH = ('<div id="live-refresh" hidden hx-swap-oob="true" hx-get="" hx-trigger="load" hx-swap="none" '
           'hx-sync="body:replace"></div>')


def notice(changed: list[str], listed: list[str], approvals_waiting: int) -> str:
    """What the socket sends when the topics `changed` did, to a page that lists the topics `listed`."""
    parts = []
    if APPROVALS in changed:
        parts.append(format_html('<span id="approvals-badge" hx-swap-oob="innerHTML">{}</span>',
                                 approvals_waiting))
    if set(changed) & set(listed):
        parts.append(REFRESH)
    return "".join(parts)
