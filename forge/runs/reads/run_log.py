"""A run's log: every step's events (status changes, errors, governance decisions, approvals) and what its
attempts printed, in one stream ordered by the run's event ids. Output comes from where it is stored with its
secrets already replaced (StepOutput for shell steps, the step row's stdout for others), placed at the event that
ended its attempt; a loop step's calls each print at the event that ended the call (the state's history)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator

from django.db.models import Max

from engine.interpreter.state import StepStatus, Wait
from forge.runs.reads.attempts import WAIT_NAMES, WAIT_SAYS
from forge.runs.reads.secret_args import hider
from forge.runs.decision_words import decided_words
from forge.runs.models import Run, RunEvent, StepOutput, StepResult
from forge.runs.selectors import step_iterations
from forge.runs.sentences import never_ran, status_word

LEVELS = ("info", "warning", "error")
KINDS = ("step", "governance", "approval", "run", "child", "rejected")  # the input events repeat these


@dataclass(frozen=True)
class Entry:
    id: int  # the run event it is, or follows
    at: str
    level: str
    step: str
    kind: str  # an event's kind, or stdout / stderr
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "level": self.level, "step": self.step, "kind": self.kind,
                "text": self.text}

    def to_text(self) -> str:
        head = f"{self.at} {self.level.upper():7} {self.step or '-':24} {self.kind}: "
        return head + self.text.replace("\n", "\n" + " " * 4)


def _step_entry(data: dict[str, Any]) -> tuple[str, str]:
    status, attempt, wait, error = data.get("status"), data.get("attempt") or 0, data.get("wait"), data.get("error")
    if never_ran(status, data.get("error_code")):  # a consequence of the failure upstream, not one of its own
        return "warning", status_word(status, data.get("error_code"))
    text = str(status) + (f" · attempt {attempt}" if attempt else "")
    if data.get("call"):
        text += f" · {data['call']}"
    if wait:
        text += " · " + WAIT_SAYS.get(WAIT_NAMES.get(wait, wait), f"waiting ({wait})")
    if error:
        text += f" · {data.get('error_code') or 'error'}: {error}"
    if status in (StepStatus.FAILED, StepStatus.TIMED_OUT) or (error and wait == Wait.ESCALATION):
        return "error", text
    return ("warning" if error else "info"), text


def _governance_entry(data: dict[str, Any]) -> tuple[str, str]:
    outcome = data.get("outcome") or "?"
    text = f"{outcome} (attempt {data.get('attempt') or 0})"
    if data.get("gate"):
        text += f" at {data['gate']}"
    if data.get("code"):
        text += f" {data['code']}"
    if data.get("message"):
        text += f": {data['message']}"
    return ("info" if outcome == "allow" else "warning"), text


def _approval_entry(data: dict[str, Any]) -> tuple[str, str]:
    status = data.get("status")
    if status == "pending":
        return "info", f"{data.get('kind') or 'approval'} requested" + (f": {data['message']}" if data.get(
            "message") else "")
    return ("warning" if status in ("rejected", "expired") else "info"), decided_words(
        status, data.get("decision"), data.get("by"))  # the log's own column says when


def _event_entry(kind: str, data: dict[str, Any]) -> tuple[str, str]:
    if kind == "step":
        return _step_entry(data)
    if kind == "governance":
        return _governance_entry(data)
    if kind == "approval":
        return _approval_entry(data)
    if kind == "run":
        error = f": {data.get('error_code')}: {data['error']}" if data.get("error") else ""
        return ("error" if data.get("status") == "failed" else "info"), f"run {data.get('status')}{error}"
    if kind == "child":
        return "info", f"started sub-workflow run {data.get('run')} ({data.get('workflow')} v{data.get('version')})"
    if kind == "artifact_refused":
        return "warning", f"artifact {data.get('path')!r} not kept: {data.get('reason')}"
    return "warning", f"an event was refused: {data.get('reason', '')}"


@dataclass(frozen=True)
class Query:
    level: str = "info"  # the least level shown
    step: str = ""
    text: str = ""
    after: int = 0
    limit: int = 500


def _outputs(run: Run, step: str, ends: dict) -> dict[tuple, list[tuple[str, str]]]:
    """(step, attempt) -> [(stream, text)]: what each attempt printed, where it is stored; and (step, attempt,
    call) -> the stdout of each call of a loop step whose end is in `ends`."""
    printed: dict[tuple, list[tuple[str, str]]] = {}
    for loop_step in sorted({end[0] for end in ends.values() if len(end) == 3}):
        for call in step_iterations(run, loop_step):
            if call.get("stdout"):
                printed[(loop_step, call.get("attempt") or 0, call.get("name"))] = [("stdout", call["stdout"])]
    rows = StepOutput.objects.filter(run=run)
    if step:
        rows = rows.filter(step=step)
    for s, attempt, out, err in rows.values_list("step", "attempt", "stdout", "stderr"):
        printed[(s, attempt)] = [(stream, text) for stream, text in (("stdout", out), ("stderr", err)) if text]
    results = StepResult.objects.filter(run=run).exclude(stdout="")
    if step:
        results = results.filter(step=step)
    for s, attempt, out in results.values_list("step", "attempt", "stdout"):
        printed.setdefault((s, attempt), [("stdout", out)])
    return printed


def _attempt_ends(run: Run, step: str) -> dict[int, tuple]:
    """event id -> (step, attempt) of each step event that ended an attempt (the event after its `running`), or
    (step, attempt, call) for a loop step's call: ended by the next call's `running` too (a review's by its fix)."""
    events = RunEvent.objects.filter(run=run, kind="step")
    if step:
        events = events.filter(step=step)
    running: dict[str, tuple] = {}
    ends: dict[int, tuple] = {}
    for event_id, s, data in events.order_by("id").values_list("id", "step", "data").iterator(chunk_size=2000):
        key = (s, data.get("attempt") or 0) + ((data["call"],) if data.get("call") else ())
        if data.get("status") == StepStatus.RUNNING:
            if len(running.get(s, ())) == 3 and running[s] != key:
                ends[event_id] = running[s]  # the call before this one printed what it printed
            running[s] = key
        elif s in running:
            ends[event_id] = running.pop(s)
    return ends


def run_log(run: Run, query: Query) -> tuple[list[Entry], int | None, int]:
    """The entries after `query.after`, at most `query.limit` events read; the id to continue after (None at
    the end), and the run's last event id."""
    last = RunEvent.objects.filter(run=run).aggregate(last=Max("id"))["last"] or 0
    events = RunEvent.objects.filter(run=run, id__gt=query.after, id__lte=last, kind__in=KINDS)
    if query.step:
        events = events.filter(step=query.step)
    page = list(events.order_by("id").values_list("id", "kind", "step", "data", "at")[:query.limit + 1])
    more = len(page) > query.limit
    page = page[:query.limit]
    ends = _attempt_ends(run, query.step) if any(kind == "step" for _, kind, *_ in page) else {}
    printed = _outputs(run, query.step, ends) if ends else {}
    least = LEVELS.index(query.level)
    needle = query.text.casefold()
    entries = []
    hide = hider(run.args)  # an argument that reads as a secret: printed or in an error, shown redacted
    for entry in _entries(page, ends, printed):
        entry = replace(entry, text=hide(entry.text))
        if LEVELS.index(entry.level) < least:
            continue
        if needle and needle not in entry.text.casefold() and needle not in entry.step.casefold():
            continue
        entries.append(entry)
    return entries, (page[-1][0] if more else None), last


def _entries(page, ends, printed) -> Iterator[Entry]:
    for event_id, kind, step, data, at in page:
        level, text = _event_entry(kind, data)
        when = at.isoformat()
        output = [Entry(event_id, when, "warning" if stream == "stderr" else "info", step, stream, out)
                  for stream, out in printed.get(ends.get(event_id), ())]
        if kind == "step" and data.get("status") == StepStatus.RUNNING:  # the call before printed before it
            yield from output
            output = []
        yield Entry(event_id, when, level, step, kind, text)
        yield from output
