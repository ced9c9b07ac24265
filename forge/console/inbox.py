"""The approvals inbox: every pending approval a person may decide, with what is being decided on."""

from __future__ import annotations

import json
from dataclasses import dataclass

from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, RunEvent, StepResult
from forge.runs.selectors import approvals_for_user


@dataclass(frozen=True)
class InboxItem:
    approval: Approval
    upstream: list[tuple[str, str]]  # (step, its outputs as JSON) of the steps it depends on
    hold: str  # for a governance hold: the gate and its message


def inbox_for_user(user) -> list[InboxItem]:
    items = []
    for approval in approvals_for_user(user):
        run = approval.run
        deps = run_workflow(run).by_id[approval.step].deps
        outputs = dict(StepResult.objects.filter(run=run, step__in=deps).values_list("step", "outputs"))
        upstream = [(dep, json.dumps(outputs.get(dep), ensure_ascii=False, sort_keys=True)) for dep in deps]
        hold = ""
        if approval.kind == "hold":
            event = RunEvent.objects.filter(run=run, step=approval.step, kind="governance").order_by("-id").first()
            if event is not None:
                hold = f"{event.data.get('gate', '?')}: {event.data.get('message', '')}"
        items.append(InboxItem(approval, upstream, hold))
    return items
