"""The approvals inbox: every pending approval a person may decide, with what is being decided on, and every reply
request they may answer, with the iteration's output and the replies so far."""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.secrets import redact_secrets
from forge.runs.reads.secret_args import hider
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run, RunEvent, StepResult
from forge.runs.selectors import approvals_for_user, replies_so_far
from forge.runs.sentences import repliers
from forge.schedules.holds import approvers_words
from forge.schedules.models import ScheduleFire
from forge.schedules.selectors import fires_of_runs


@dataclass(frozen=True)
class ReplyAsk:
    """What a reply request's card shows beside its message (spec section 9's reply gate)."""

    approval: Approval
    of: int  # the loop's max_iterations: "iteration k of N"
    replies: list[Approval]  # the step's answered requests, by iteration (reply, decided_by, decided_at)
    who: str  # who may answer, in words
    message: str  # the request's message and the iteration's output, an argument that reads as a secret redacted
    output: str

    @property
    def iteration(self) -> int:
        return self.approval.iteration


def reply_ask(approval: Approval, run: Run | None = None) -> ReplyAsk | None:
    """The card's facts for a reply request (None for any other kind)."""
    if approval.kind != Approval.REPLY:
        return None
    run = run or approval.run
    spec = run_workflow(run).by_id.get(approval.step)
    loop = spec.model.loop if spec is not None else None
    starter = run.started_by.get_username() if run.started_by_id else ""
    who = repliers(approval.approvers) + (f", or the person who started the run ({starter})" if starter else "")
    hide = hider(run.args)
    return ReplyAsk(approval=approval, of=getattr(loop, "max_iterations", None) or 0,
                    replies=replies_so_far(run, approval.step), who=who, message=hide(approval.message),
                    output=hide(approval.output))


@dataclass(frozen=True)
class StartAsk:
    """What a held run's start card shows (spec 15: a schedule that requires approval): the schedule that
    started it, as it is now, beside the request's message, which names it as it was when it fired."""

    approval: Approval
    fire: ScheduleFire | None  # None once the schedule is deleted: the message still names it
    who: str  # who may approve, in words
    args: list[tuple[str, str]]  # the run's arguments as JSON, those that read as secrets redacted

    @property
    def schedule(self):
        return self.fire.schedule if self.fire else None


def start_ask(approval: Approval, fire: ScheduleFire | None) -> StartAsk:
    shown = redact_secrets(approval.run.args)  # as the run's header and the audit trail show them
    args = [(name, json.dumps(value, ensure_ascii=False, sort_keys=True)) for name, value in sorted(shown.items())]
    return StartAsk(approval=approval, fire=fire, who=approvers_words(approval.approvers), args=args)


@dataclass(frozen=True)
class InboxItem:
    approval: Approval
    upstream: list[tuple[str, str]]  # (step, its outputs as JSON) of the steps it depends on
    hold: str  # for a governance hold: the gate and its message
    ask: ReplyAsk | None = None  # for a reply request
    start: StartAsk | None = None  # for a held run's start


def inbox_for_user(user) -> list[InboxItem]:
    items = []
    pending = approvals_for_user(user)
    fires = fires_of_runs(a.run_id for a in pending if a.kind == Approval.START)
    for approval in pending:
        run = approval.run
        if approval.kind == Approval.REPLY:  # what it answers is the iteration's output, not the upstream's
            items.append(InboxItem(approval, [], "", reply_ask(approval, run)))
            continue
        if approval.kind == Approval.START:  # the whole run waits: it decides on the schedule, not on a step
            items.append(InboxItem(approval, [], "", start=start_ask(approval, fires.get(run.pk))))
            continue
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
