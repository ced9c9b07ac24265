"""What a round's step events carry: what the run view's table shows of the step (status, attempt, times, cost,
tokens) and the sentence saying why it is not running, so the page never reads rows again after an event."""

from __future__ import annotations

from engine.interpreter import commands as cmd
from engine.money import money_text
from engine.interpreter.state import StepStatus
from engine.workflow import Workflow
from forge.runs.models import RunEvent
from forge.runs.sentences import status_word, why_not_running
from forge.runs.times import to_datetime


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else to_datetime(seconds).isoformat()


def step_data(command: cmd.StepChanged, state) -> dict:
    """The event of one change: the command's fields and the step's times, cost and tokens (ISO 8601 times, as the
    event's `at`; a step ends once, so `finished_at` belongs to a status that ended it), and the cost as the
    table writes it (`cost_text`: engine/money's, so the page formats no money of its own)."""
    st = state.steps[command.step]
    data = command.to_json()
    del data["type"], data["step"]
    data.update(started_at=_iso(st.started_at),
                finished_at=_iso(st.finished_at) if command.status in StepStatus.TERMINAL else None,
                cost=st.cost, cost_text=money_text(st.cost), tokens=st.tokens,
                iteration=st.iteration)  # a loop step's count, which the graph's node shows live
    if command.status == StepStatus.RUNNING and st.history and st.history[-1].get("finished_at", 0) is None:
        data["call"] = st.history[-1]["name"]  # which of a loop step's calls is running (`review_fix_1`)
    return data


def add_sentences(workflow: Workflow, state, events: list[RunEvent]) -> None:
    """Give each step event its `why` and status `word`, and the last event of a step that ended this round the
    new `why` of its dependents still waiting for upstream (`downstream`: step -> sentence). Done when the
    round is written, so the approvals and timers asked for after a change are known."""
    steps = state.steps
    children = {e.step: e.data.get("run") for e in events if e.kind == "child"}
    approvals = {a["step"]: a for a in state.approvals if a["status"] == "pending"}
    expiries = {t["step"]: t["fire_at"] for t in state.timers.values() if t.get("purpose") == "approval_timeout"}
    graph = workflow.graph
    told: set[str] = set()

    def why(step: str, status: str, wait: str | None, attempt: int, error, error_code) -> str:
        approval = approvals.get(step)
        return why_not_running(
            status, wait, attempt=attempt, error=error, error_code=error_code,
            waiting_for=[d for d in workflow.by_id[step].deps if steps[d].status not in StepStatus.TERMINAL],
            approvers=approval["approvers"] if approval else None,
            expires_at=to_datetime(expiries.get(step)) if approval else None, child_run=children.get(step))

    for event in reversed(events):  # the last event of a round tells a dependent's sentence, once
        if event.kind != "step":
            continue
        data = event.data
        data["why"] = why(event.step, data["status"], data.get("wait"), data.get("attempt", 0), data.get("error"),
                          data.get("error_code"))
        data["word"] = status_word(data["status"], data.get("error_code"))
        if data["status"] not in StepStatus.TERMINAL:
            continue
        downstream = {}
        for k in graph.dependents[graph.index[event.step]]:
            step = graph.ids[k]
            st = steps[step]
            if step not in told and st.status == StepStatus.PENDING and not st.wait:
                told.add(step)
                downstream[step] = why(step, st.status, None, st.attempt, None, None)
        if downstream:
            data["downstream"] = downstream
