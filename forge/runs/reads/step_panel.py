"""One step of a run, in full: its attempts (timings, error, governance decisions), what it was given, what it
returned, its approval, a loop step's calls (spec section 9), where each attempt went and what it spent, what it
used of the agent the run pinned, and its artifacts. Read from the step's row, its RunEvents, its approval rows,
its artifact rows and the run's state (the calls' history)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.interpreter.state import StepStatus
from forge.runs.reads.attempt_calls import AttemptCall, PinnedAgent, attempt_calls, pinned_agent
from forge.runs.reads.attempts import StepTimes, step_times
from forge.runs.reads.loop_count import loop_count
from forge.runs.reads.secret_args import hider
from forge.runs.reads.step_artifacts import Kept, Refused, step_artifacts
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run, StepOutput, StepResult
from forge.runs.selectors import step_iterations
from forge.runs.sentences import status_class, status_word
from forge.runs.times import to_datetime


@dataclass(frozen=True)
class Call:
    """One call of a loop step, named as seed 002 names it (`review`, `review_fix_1`, `review_2`; `ask_iter_1`)."""

    name: str
    kind: str  # iteration, review or fix
    iteration: int  # an iterate loop's iteration; a review loop's call number
    cycle: int | None  # a review loop's fix cycle
    attempt: int
    agent: str
    command: str  # as rendered (a shell step's refers to its values as $FORGE_Vn)
    values: list[tuple[str, str]]  # a shell step's FORGE_Vn and the value each holds
    stdout: str
    outputs: str  # as JSON
    verdict: str | None  # a review's
    reply: str | None  # the answer that followed an iteration (a reply gate's)
    reply_by: str
    reply_at: datetime | None
    seconds: float | None
    cost: float
    tokens: int


def _call(entry: dict[str, Any], hide) -> Call:
    """One call as shown: an argument that reads as a secret is redacted wherever it was rendered or repeated."""
    started, finished = entry.get("started_at"), entry.get("finished_at")
    env = hide(entry.get("env") or {})
    return Call(name=str(entry.get("name", "")), kind=str(entry.get("kind", "iteration")),
                iteration=entry.get("iteration") or 0, cycle=entry.get("cycle"), attempt=entry.get("attempt") or 0,
                agent=entry.get("agent") or "", command=hide(entry.get("command") or ""),
                values=sorted(env.items(), key=lambda kv: (len(kv[0]), kv[0])),
                stdout=hide(entry.get("stdout") or ""), outputs=_json(hide(entry.get("outputs"))),
                verdict=entry.get("verdict"), reply=hide(entry.get("reply")),
                reply_by=entry.get("reply_by") or "", reply_at=to_datetime(entry.get("reply_at")),
                seconds=finished - started if started is not None and finished is not None else None,
                cost=entry.get("cost") or 0.0, tokens=entry.get("tokens") or 0)


@dataclass
class StepPanel:
    run: Run
    row: StepResult
    times: StepTimes  # its attempts, each with its own duration, and the waits between them
    given: str  # what the engine asked the agent to do, as JSON
    outputs: str
    approvals: list[Approval]
    printed: StepOutput | None  # the current attempt's output so far (a shell step), with its stderr
    calls: list[Call]  # a loop step's, in order
    loop_count: str  # "iteration 3 of 8", "cycle 1 of 2": where a loop step is
    # What the step printed (the step's row, the current attempt's output so far), as shown: an argument that
    # reads as a secret redacted, as in its calls.
    stdout: str = ""
    printed_stdout: str = ""
    printed_stderr: str = ""
    attempt_calls: list[AttemptCall] = field(default_factory=list)  # each attempt's gateway, model, tokens, cost
    pinned: PinnedAgent | None = None  # the agent as the run pinned it, with the step's agent_config
    artifacts: list[Kept] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)  # matches not kept, and why
    overlay: dict[str, Any] = field(default_factory=dict)  # the step's agent_config, as the workflow says it

    @property
    def running(self) -> bool:
        return self.row.status == StepStatus.RUNNING

    # The heading's status as the steps table words and colours it ("not run: upstream failed").
    @property
    def word(self) -> str:
        return status_word(self.row.status, self.row.error_code)

    @property
    def status_class(self) -> str:
        return status_class(self.row.status, self.row.error_code)


def _json(value: Any) -> str:
    return "" if value in (None, {}, []) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def step_panel(run: Run, step: str) -> StepPanel | None:
    row = StepResult.objects.filter(run=run, step=step).first()
    if row is None:
        return None
    # A reply request's answer is shown with the call it followed (the calls' list), not among the decisions.
    approvals = list(Approval.objects.filter(run=run, step=step).exclude(kind=Approval.REPLY)
                     .select_related("decided_by").order_by("id"))
    printed = StepOutput.objects.filter(run=run, step=step, attempt=row.attempt).first()
    spec = run_workflow(run).by_id.get(step)
    calls, count = [], ""
    hide = hider(run.args)
    if spec is not None and spec.model.loop is not None and row.iteration:
        calls = [_call(entry, hide) for entry in step_iterations(run, step)]
        count = loop_count(spec.model.loop, row.iteration)
    config = spec.model.agent_config if spec is not None else None
    overlay = config.model_dump(exclude_none=True) if config is not None else {}
    kept, refused = step_artifacts(run, step)
    return StepPanel(run=run, row=row, times=step_times(run, step),
                     given=_json(hide(row.dispatch)), outputs=_json(hide(row.outputs)), approvals=approvals,
                     printed=printed, calls=calls, loop_count=count, stdout=hide(row.stdout or ""),
                     printed_stdout=hide(printed.stdout if printed else ""),
                     printed_stderr=hide(printed.stderr if printed else ""),
                     attempt_calls=attempt_calls(run, step),
                     pinned=pinned_agent(run, row.agent or "", overlay), overlay=overlay,
                     artifacts=kept, refused=refused)
