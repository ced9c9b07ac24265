"""What the run view shows, read from rows: the pinned version's graph, each step's row, why a step is not
running, and the last event id the page shows (where its live stream starts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Max

from engine.interpreter.state import StepStatus
from engine.money import money_text
from forge.runs.reads.loop_count import loop_of
from forge.runs.compiled import run_workflow
from forge.runs.models import Approval, Run, RunEvent, StepResult
from forge.runs.restart_plan import carried_steps
from forge.runs.sentences import start_held, status_class, status_word, why_not_running
from forge.schedules.selectors import fires_of_runs
from forge.workflows.layouts import layout_of, placements_of

SKIPPED_LIKE = {StepStatus.SKIPPED, StepStatus.CANCELLED}


@dataclass
class Node:
    id: str
    kind: str
    deps: tuple[str, ...]
    status: str = StepStatus.PENDING
    wait: str | None = None
    attempt: int = 0
    cost: float = 0.0
    tokens: int = 0
    seconds: float | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    error_code: str | None = None
    why: str = ""
    child_run: int | None = None
    carried: bool = False
    name: str = ""  # the step's `name`, shown beside its id
    phase: str = ""
    loop: dict[str, Any] | None = None  # a loop step's flavour and bound (forge/runs/reads/loop_count.py)
    iteration: int = 0  # a loop step's calls or iterations so far

    def to_json(self) -> dict[str, Any]:
        """What the page's script needs of a node (the table carries the rest)."""
        return {"id": self.id, "kind": self.kind, "deps": self.deps, "status": self.status, "wait": self.wait,
                "attempt": self.attempt, "child_run": self.child_run, "error_code": self.error_code,
                "word": self.word, "name": self.name, "loop": self.loop, "iteration": self.iteration}

    def live_fields(self) -> dict[str, Any]:
        """What a step event carries of the step (forge/runtime/step_events.py), read from its row: the
        websocket's snapshot sends these."""
        return {"status": self.status, "wait": self.wait, "attempt": self.attempt, "error": self.error,
                "error_code": self.error_code, "why": self.why, "word": self.word, "cost": self.cost,
                "cost_text": self.cost_text, "tokens": self.tokens, "started_at": _iso(self.started_at), "finished_at": _iso(self.finished_at),
                "iteration": self.iteration}

    @property
    def word(self) -> str:
        return status_word(self.status, self.error_code)

    @property
    def status_class(self) -> str:
        return status_class(self.status, self.error_code)

    # Formatted here, once, for the table and for what the page reads again after a change.
    @property
    def time_text(self) -> str:
        return "-" if self.seconds is None else f"{self.seconds:.2f} s"

    @property
    def cost_text(self) -> str:
        return money_text(self.cost)  # as a step event writes it (forge/runtime/step_events.py)


@dataclass
class RunView:
    run: Run
    nodes: list[Node]
    last_event_id: int
    approvals: list[Approval] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)  # the document's phases, in its order

    def graph_json(self) -> dict[str, Any]:
        return {"run": self.run.pk, "status": self.run.status, "last_event_id": self.last_event_id,
                "layout": layout_of(self.run.version.content_hash),
                "placements": placements_of(self.run.version.workflow_id),
                "nodes": [node.to_json() for node in self.nodes]}


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def _why(node: Node, by_id: dict[str, Node], approval: Approval | None, held: str = "") -> str:
    return why_not_running(
        node.status, node.wait, attempt=node.attempt, error=node.error, error_code=node.error_code,
        waiting_for=[dep for dep in node.deps if by_id[dep].status not in StepStatus.TERMINAL],
        approvers=approval.approvers if approval else None, expires_at=approval.expires_at if approval else None,
        child_run=node.child_run, held=held)


def held_words(run_ids) -> dict[int, str]:
    """For each of `run_ids` held before its first step, "waiting for approval to start (schedule #N)"."""
    held = list(Approval.objects.filter(run_id__in=list(run_ids), kind=Approval.START, status=Approval.PENDING)
                .values_list("run_id", flat=True))
    fires = fires_of_runs(held) if held else {}
    return {run_id: start_held(fires[run_id].schedule_id if run_id in fires else None) for run_id in held}


def run_view(run: Run) -> RunView:
    # The last event id first, the rows after: a round that commits in between is then replayed by the
    # socket (setting the same values again) instead of being counted as shown when the rows predate it.
    last = RunEvent.objects.filter(run=run).aggregate(last=Max("id"))["last"] or 0
    run.refresh_from_db(fields=["status", "error", "error_code", "finished_at"])
    workflow = run_workflow(run)
    rows = {row.step: row for row in StepResult.objects.filter(run=run)}
    pending = {a.step: a for a in Approval.objects.filter(run=run, status=Approval.PENDING)}
    children = dict(Run.objects.filter(parent=run).values_list("parent_step", "pk"))
    carried = carried_steps(run)
    nodes = []
    for spec in workflow.steps:
        node = Node(id=spec.id, kind=spec.kind, deps=tuple(spec.deps), child_run=children.get(spec.id),
                    carried=spec.id in carried, name=spec.model.name or "", phase=spec.model.phase or "",
                    loop=loop_of(spec.model.loop))
        row = rows.get(spec.id)
        if row is not None:
            node.status, node.wait, node.attempt = row.status, row.wait, row.attempt
            node.cost, node.tokens, node.error, node.error_code = row.cost, row.tokens, row.error, row.error_code
            node.started_at, node.finished_at = row.started_at, row.finished_at
            node.iteration = row.iteration or 0
            if row.started_at and row.finished_at:
                node.seconds = (row.finished_at - row.started_at).total_seconds()
        nodes.append(node)
    by_id = {node.id: node for node in nodes}
    held = held_words([run.pk]).get(run.pk, "") if "" in pending else ""
    for node in nodes:
        node.why = _why(node, by_id, pending.get(node.id), held)
    return RunView(run=run, nodes=nodes, last_event_id=last, approvals=list(pending.values()),
                   phases=list(workflow.document.phases))
