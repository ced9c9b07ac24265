"""Sub-workflows: a step that runs another workflow as a child run, and hears back when it ends."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter.state import RunStatus
from engine.problems import WorkflowInvalid
from engine.runner import MAX_CHILD_DEPTH
from forge.runs.creation import RunRefused, compile_version, create_run, referenced_version
from forge.runs.models import Run, RunInput



def depth(run: Run) -> int:
    level, parent_id = 0, run.parent_id
    while parent_id is not None and level <= MAX_CHILD_DEPTH:
        parent_id = Run.objects.filter(pk=parent_id).values_list("parent_id", flat=True).first()
        level += 1
    return level


def start_child(round_, command: cmd.StartChild) -> None:
    from forge.runs.tasks import enqueue_advance

    run = round_.run

    def failed(message: str) -> None:
        round_.immediate.append(ev.ChildFinished(command.step, command.attempt, RunStatus.FAILED, error=message,
                                                 at=round_.at))

    if depth(run) >= MAX_CHILD_DEPTH:
        return failed(f"sub-workflows nest deeper than {MAX_CHILD_DEPTH} levels")
    version = referenced_version(command.workflow, command.version)
    if version is None:
        which = f" version {command.version}" if command.version is not None else ""
        return failed(f"there is no workflow {command.workflow!r}{which} to run as a sub-workflow")
    try:
        compiled, used = compile_version(version)
        args = resolve_args(compiled.document, command.args)
        with transaction.atomic():
            child = create_run(version=version, workflow=compiled, used_library=used, args=args,
                               user=run.started_by, parent=run, parent_step=command.step,
                               parent_attempt=command.attempt, context_trust=run.context_trust)
    except (WorkflowInvalid, ArgumentsInvalid, RunRefused) as exc:
        return failed(f"{command.workflow}: {exc}")
    round_.log("child", command.step, {"run": child.pk, "workflow": command.workflow, "version": version.number})
    round_.audit("forge.run.child_started", step=command.step, attempt=command.attempt,
                 detail={"child_run": child.pk})
    round_.after_commit.append(lambda: enqueue_advance(child.pk))


def cancel_child(round_, command: cmd.CancelChild) -> None:
    from forge.runs.tasks import enqueue_advance

    now = timezone.now()
    for child_id in Run.objects.filter(parent=round_.run, parent_step=command.step).exclude(
            status__in=RunStatus.TERMINAL).values_list("pk", flat=True):
        RunInput.objects.bulk_create([RunInput(
            run_id=child_id, key="cancel", due_at=now, created_at=now,
            event=ev.CancelRequested(by="parent run", reason=command.reason, at=now.timestamp()).to_json())],
            ignore_conflicts=True)
        round_.after_commit.append(lambda child_id=child_id: enqueue_advance(child_id))


def report_to_parent(round_, run: Run) -> None:
    """Inside the child's last round: tell the parent, whose step waits on this run."""
    from forge.runs.tasks import enqueue_advance

    _parent_input(run, round_.interpreter.state.variables)
    round_.after_commit.append(lambda: enqueue_advance(run.parent_id))


def report_finished(run: Run) -> None:
    """The same, for a child ended outside a round (the crash-loop breaker)."""
    from forge.runs.tasks import enqueue_advance

    _parent_input(run, {})
    transaction.on_commit(lambda: enqueue_advance(run.parent_id))


def _parent_input(run: Run, variables: dict) -> None:
    now = timezone.now()
    event = ev.ChildFinished(run.parent_step, run.parent_attempt or 0, run.status,
                             outputs=dict(variables),
                             error=run.error, at=now.timestamp())
    RunInput.objects.bulk_create([RunInput(run_id=run.parent_id, key=f"child:{run.parent_step}:{run.parent_attempt}",
                                           event=event.to_json(), due_at=now, created_at=now)],
                                 ignore_conflicts=True)
