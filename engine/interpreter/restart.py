"""Restart-from-step (spec section 8): a new run that carries over what does not need to run again."""

from __future__ import annotations

from typing import Any

from engine.interpreter.machine import initial_variables
from engine.interpreter.state import Options, RunState, StepState, StepStatus
from engine.workflow import Workflow


def steps_to_rerun(workflow: Workflow, step: str) -> set[str]:
    """`step` and every step that depends on it, directly or not."""
    if step not in workflow.by_id:
        raise ValueError(f"the workflow has no step {step!r}")
    return {step} | workflow.graph.transitive_dependents([step])


def restart_state(workflow: Workflow, previous: RunState, step: str, *, run_id: str,
                  args: dict[str, Any] | None = None, options: Options | None = None) -> RunState:
    """The state of a new run of the same workflow version, restarted from `step`.

    Every step that completed in `previous` and is neither `step` nor one of
    its transitive dependents is carried over: shown completed, marked
    carried, with its outputs; the variables and their overwrite order are
    rebuilt from the carried steps in their original completion order. All
    other steps run again.

    Args:
        workflow: the workflow version both runs pinned.
        previous: the finished run's state.
        step: the step to restart from.
        run_id: the new run's id.
        args: the new run's arguments (default: the previous run's).
        options: the new run's options (default: the previous run's).

    Returns:
        A state to give to `Interpreter.new(..., state=...)`, then feed RunStarted.
    """
    rerun = steps_to_rerun(workflow, step)
    if set(previous.steps) != set(workflow.by_id):
        raise ValueError("the previous run is of another version of this workflow")
    args = dict(previous.args if args is None else args)
    steps = {spec.id: StepState() for spec in workflow.steps}
    carried: set[str] = set()
    for step_id, before in previous.steps.items():
        if before.status == StepStatus.COMPLETED and step_id not in rerun:
            after = steps[step_id]
            after.status = StepStatus.COMPLETED
            after.outputs = before.outputs
            after.stdout = before.stdout
            after.attempt = before.attempt
            after.iteration = before.iteration
            after.history = [dict(call) for call in before.history]  # a carried loop step shows its calls
            after.started_at, after.finished_at = before.started_at, before.finished_at
            after.carried = True
            carried.add(step_id)
    state = RunState(run_id=run_id, args=args, options=options or previous.options, steps=steps,
                     variables=initial_variables(workflow, args))
    for key, owner in previous.variable_order:
        if owner in carried:
            state.variables[key] = previous.steps[owner].outputs[key]
            state.variable_order.append([key, owner])
    return state
