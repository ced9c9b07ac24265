"""Creating a run: its row, one step row per step, the first checkpoint and the start event."""

from __future__ import annotations

import json
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from engine.interpreter import Interpreter, Options, RunStarted
from engine.interpreter.state import RunState
from engine.problems import WorkflowInvalid
from engine.workflow import Workflow
from forge.errors import Invalid, TooLarge
from forge.runs import agent_config
from forge.runs.compiled import new_run_workflow
from forge.runs.models import Checkpoint, Run, RunEvent, RunInput, StepResult
from forge.runs.pinning import pins, step_agents
from forge.runtime import inbox
from forge.workflows.models import WorkflowVersion
from forge.workflows.services import shell_agents


class RunRefused(Invalid):
    """The run cannot start as asked; nothing was created. `code` says which rule refused it."""

    def __init__(self, message: str, *, code: str = "run_refused", **extra):
        super().__init__(message, code=code, **extra)


class RunTooLarge(TooLarge, RunRefused):
    """The run's arguments are past this installation's bound."""


def referenced_version(name: str, number: int | None) -> WorkflowVersion | None:
    """The version a `workflow_ref` runs: the one it names, or the workflow's latest."""
    versions = WorkflowVersion.objects.filter(workflow__name=name)
    if number is not None:
        return versions.filter(number=number).first()
    return versions.order_by("-number").first()


def check_references(workflow: Workflow, path: tuple[str, ...] = ()) -> None:
    """Refuse a cycle of workflow references (spec section 10); a missing one fails its step when it starts."""
    path = (*path, workflow.name)
    for spec in workflow.steps:
        ref = spec.model.ref
        if ref is None:
            continue
        if ref.name in path:
            cycle = " -> ".join((*path[path.index(ref.name):], ref.name))
            raise RunRefused(f"workflow references form a cycle: {cycle}")
        version = referenced_version(ref.name, ref.version)
        if version is not None:
            check_references(new_run_workflow(version)[0], path)


def reachable_agents(workflow: Workflow, seen: frozenset[str] = frozenset()) -> set[str]:
    """Every agent a run of `workflow` may call, its sub-workflows' (their versions as of now) included: all are
    pinned when the run starts, and its child runs keep those pins."""
    names = step_agents(workflow)
    seen = seen | {workflow.name}
    for spec in workflow.steps:
        ref = spec.model.ref
        if ref is None or ref.name in seen:
            continue
        version = referenced_version(ref.name, ref.version)
        try:
            if version is not None:
                names |= reachable_agents(new_run_workflow(version)[0], seen)
        except WorkflowInvalid:
            continue  # its step fails when it starts, saying why
    return names


def options() -> Options:
    return Options(max_concurrency=settings.FORGE_RUNNER_CONCURRENCY,
                   default_timeout_s=float(min(3600, settings.FORGE_STEP_TIMEOUT_MAX_S)),
                   shell_agents=shell_agents())


def check_timeouts(workflow: Workflow) -> None:
    limit = settings.FORGE_STEP_TIMEOUT_MAX_S
    for spec in workflow.steps:
        seconds = spec.model.timeout_s
        if seconds is not None and seconds > limit and spec.kind == "agent":
            raise RunRefused(f"step {spec.id!r} has a timeout of {seconds:g} s, longer than this installation "
                             f"allows (at most {limit:g} s)")
    seconds, limit = workflow.document.timeout_s, settings.FORGE_RUN_TIMEOUT_MAX_S  # the run deadline's own bound
    if seconds is not None and seconds > limit:
        raise RunRefused(f"the workflow's timeout is {seconds:g} s, longer than this installation lets a run last "
                         f"(at most {limit:g} s, FORGE_RUN_TIMEOUT_MAX_S)")


def _deadline(workflow: Workflow, start):
    """When the document's timeout ends the run: counted from its RunStarted, which is `start` (spec 15)."""
    seconds = workflow.document.timeout_s
    return None if seconds is None else start + timedelta(seconds=seconds)


def check_args_size(args: dict) -> None:
    """Refuse arguments that are not JSON, or larger in all than FORGE_MAX_ARGS_BYTES as JSON: each run keeps
    copies of them."""
    limit = settings.FORGE_MAX_ARGS_BYTES
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and the database's JSON columns refuse them.
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    except ValueError:
        raise RunRefused("the run's arguments hold a number that is not finite (NaN or Infinity), which JSON "
                         "cannot keep") from None
    except RecursionError:
        raise RunRefused("the run's arguments nest too deeply to be kept as JSON") from None
    size = len(text.encode("utf-8"))
    if size > limit:
        raise RunTooLarge(f"the run's arguments are {size} bytes as JSON, more than this installation allows "
                         f"(at most {limit} bytes); pass large data as a file or a reference instead")


def create_run(*, version: WorkflowVersion, workflow: Workflow, used_library: dict, args: dict, user=None,
               parent: Run | None = None, parent_step: str = "", parent_attempt: int | None = None,
               restarted_from: Run | None = None, restart_from_step: str = "",
               prepare=None, context_trust: int = 0, hold: dict | None = None) -> Run:
    """Write a new run, ready for its first `advance` (the caller enqueues it after commit).

    `prepare(run_id) -> RunState` gives a prepared state (restart-from-step) instead of a new one; `hold`
    (RunStarted's) holds the run before its first step until its start is approved.
    """
    check_timeouts(workflow)
    check_args_size(args)
    now = timezone.now()
    # A restart keeps its source run's agents, a child its parent's (forge/runs/pinning.py).
    source = restarted_from or parent
    pinned = pins(reachable_agents(workflow), source.pinned if source else None)
    if problem := agent_config.refusal(workflow, pinned):  # against the agents as this run pins them
        raise RunRefused(problem, code=agent_config.CODE)
    run = Run.objects.create(workflow=version.workflow, version=version, args=args, started_by=user,
                             parent=parent, parent_step=parent_step, parent_attempt=parent_attempt,
                             restarted_from=restarted_from, restart_from_step=restart_from_step,
                             library=used_library, context_trust=context_trust, created_at=now, progressed_at=now,
                             pinned=pinned, deadline_at=_deadline(workflow, now))
    state: RunState | None = prepare(str(run.pk)) if prepare else None
    interpreter = Interpreter.new(workflow, run_id=str(run.pk), args=args, options=options(), state=state)
    steps = interpreter.state.steps
    StepResult.objects.bulk_create([
        StepResult(run=run, step=spec.id, position=i, status=steps[spec.id].status, attempt=steps[spec.id].attempt,
                   outputs=steps[spec.id].outputs, stdout=steps[spec.id].stdout or "", updated_at=now,
                   agent=spec.model.agent or "")
        for i, spec in enumerate(workflow.steps)])
    Checkpoint.objects.create(run=run, inputs_fed=0, event_id=0, state=interpreter.state.to_json(), created_at=now)
    RunInput.objects.create(run=run, key=inbox.START, event=RunStarted(at=now.timestamp(), hold=hold).to_json(),
                            due_at=now, created_at=now)
    RunEvent.objects.create(run=run, kind="run", data={"status": run.status}, at=now)
    return run
