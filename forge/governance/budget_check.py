"""Whether a budget already used its limit for a workflow: the one check a schedule's due time passes before
its run starts (forge/schedules/guards.py) and the Run form says before a person starts one."""

from __future__ import annotations

from datetime import datetime

from forge.governance.models import BudgetEnvelope
from engine.money import money_text
from forge.governance.reservations import Ledger


def exhausted_budget(workflow: str, now: datetime) -> str | None:
    """Why a run of `workflow` would be refused now: a budget covering it (org, or workflow:<name>) has used
    its limit, open reservations included; None while every one has some left. Only a pre-check: each step's
    dispatch still reserves its cost."""
    envelopes = list(BudgetEnvelope.objects.filter(enabled=True, scope__in=("org", f"workflow:{workflow}"))
                     .order_by("pk"))
    if not envelopes:
        return None
    # Read without row locks: this reserves nothing, and a round locks runs before envelopes.
    figures = Ledger.open(now, envelopes, (), lock=False).envelopes
    for envelope in envelopes:
        spent, reserved = figures[envelope.pk]
        if spent + reserved >= envelope.limit:
            period = " this month" if envelope.monthly else ""
            held = f" ({money_text(reserved)} of it reserved by steps in flight)" if reserved else ""
            return (f"budget {envelope.name!r} ({envelope.scope}) has used {money_text(spent + reserved)} of its "
                    f"{money_text(envelope.limit)} limit{period}{held}")
    return None
