"""Sub-workflows: a step that runs another workflow as a child run, and hears back when it ends."""

from __future__ import annotations

from django.db import transaction

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter.state import RunStatus
from engine.problems import WorkflowInvalid
from engine.workflow import MAX_CHILD_DEPTH
from forge.audit import codes
from forge.runs.compiled import new_run_workflow
from forge.runs.creation import RunRefused, create_run, referenced_version
from forge.runs.models import Run, RunInput
from forge.runtime import inbox, queue
from forge.runtime.effects import Effects


def depth(run: Run) -> int:
    level, parent_id = 0, run.parent_id
    while parent_id is not None and level <= MAX_CHILD_DEPTH:
        parent_id = Run.objects.filter(pk=parent_id).values_list("parent_id", flat=True).first()
        level += 1
    return level


def start_child(effects: Effects, command: cmd.StartChild) -> None:
    run = effects.run

    def failed(message: str) -> None:
        effects.feed_next(ev.ChildFinished(command.step, command.attempt, RunStatus.FAILED, error=message,
                                           at=effects.at))

    if depth(run) >= MAX_CHILD_DEPTH:
        return failed(f"sub-workflows nest deeper than {MAX_CHILD_DEPTH} levels")
    version = referenced_version(command.workflow, command.version)
    if version is None:
        which = f" version {command.version}" if command.version is not None else ""
        return failed(f"there is no workflow {command.workflow!r}{which} to run as a sub-workflow")
    try:
        compiled, used = new_run_workflow(version)
        args = resolve_args(compiled.document, command.args)
        with transaction.atomic():
            child = create_run(version=version, workflow=compiled, used_library=used, args=args,
                               user=run.started_by, parent=run, parent_step=command.step,
                               parent_attempt=command.attempt, context_trust=run.context_trust)
    except (WorkflowInvalid, ArgumentsInvalid, RunRefused) as exc:
        return failed(f"{command.workflow}: {exc}")
    effects.log("child", command.step, {"run": child.pk, "workflow": command.workflow, "version": version.number})
    effects.audit(codes.RUN_CHILD_STARTED, step=command.step, attempt=command.attempt,
                  detail={"child_run": child.pk})
    effects.on_commit(lambda: queue.enqueue_advance(child.pk))


def cancel_child(effects: Effects, command: cmd.CancelChild) -> None:
    """The parent's step was stopped: each of its child runs still going is cancelled by its own next round."""
    now = effects.now
    event = ev.CancelRequested(by="parent run", reason=command.reason, at=effects.at).to_json()
    for child_id in Run.objects.filter(parent=effects.run, parent_step=command.step).exclude(
            status__in=RunStatus.TERMINAL).values_list("pk", flat=True):
        RunInput.objects.bulk_create([RunInput(run_id=child_id, key=inbox.CANCEL, due_at=now, created_at=now,
                                               event=event)], ignore_conflicts=True)
        effects.on_commit(lambda child_id=child_id: queue.enqueue_advance(child_id))


def report_to_parent(effects: Effects, variables: dict) -> None:
    """Inside the child's last round: tell the parent, whose step waits on this run."""
    run = effects.run
    event = ev.ChildFinished(run.parent_step, run.parent_attempt or 0, run.status, outputs=dict(variables),
                             error=run.error, at=effects.at)
    RunInput.objects.bulk_create([RunInput(run_id=run.parent_id, key=inbox.child(run.parent_step, run.parent_attempt),
                                           event=event.to_json(), due_at=effects.now, created_at=effects.now)],
                                 ignore_conflicts=True)
    parent_id = run.parent_id
    effects.on_commit(lambda: queue.enqueue_advance(parent_id))
