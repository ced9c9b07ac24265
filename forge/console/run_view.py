"""What the run view shows, read from rows: the pinned version's graph, each step's row, why a step is not
running, and the last event id the page shows (where its live stream starts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Max

from engine.interpreter.state import StepStatus, Wait
from forge.console.restart_plan import carried_steps
from forge.runs.creation import compile_version
from forge.runs.models import Approval, Run, RunEvent, StepResult
from forge.workflows.layouts import layout_of

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
    error: str | None = None
    error_code: str | None = None
    why: str = ""
    child_run: int | None = None
    carried: bool = False
    name: str = ""  # the step's `name`, shown beside its id
    phase: str = ""

    def to_json(self) -> dict[str, Any]:
        """What the page's script needs of a node (the table carries the rest)."""
        return {"id": self.id, "kind": self.kind, "deps": self.deps, "status": self.status, "wait": self.wait,
                "attempt": self.attempt, "child_run": self.child_run}

    # Formatted here, once, for the table and for what the page reads again after a change.
    @property
    def time_text(self) -> str:
        return "-" if self.seconds is None else f"{self.seconds:.2f} s"

    @property
    def cost_text(self) -> str:
        return f"{self.cost:.4f}"


@dataclass
class RunView:
    run: Run
    nodes: list[Node]
    last_event_id: int
    approvals: list[Approval] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)  # the document's phases, in its order

    def cancel_says(self) -> str:
        """What the Cancel button's confirmation says will stop."""
        moving = [node.id for node in self.nodes if node.status in (StepStatus.RUNNING, StepStatus.WAITING)]
        return (f"Cancel run {self.run.pk}? " + (f"Running or waiting steps stop: {', '.join(moving)}. " if moving
                                                 else "") + "Steps not yet started never start.")

    def graph_json(self) -> dict[str, Any]:
        return {"run": self.run.pk, "status": self.run.status, "last_event_id": self.last_event_id,
                "layout": layout_of(self.run.version.content_hash),
                "nodes": [node.to_json() for node in self.nodes]}


def why_not_running(node: Node, by_id: dict[str, Node], approval: Approval | None) -> str:
    """The sentence a person reads on a pending or waiting node; empty for the others."""
    if node.status == StepStatus.PENDING:
        waiting = [dep for dep in node.deps if by_id[dep].status not in StepStatus.TERMINAL]
        if waiting:
            return f"waiting for upstream {', '.join(waiting)}"
        return "ready: waiting to be dispatched"
    if node.status not in (StepStatus.WAITING, StepStatus.RUNNING) or not node.wait:
        return ""
    if node.wait in (Wait.APPROVAL, Wait.ESCALATION, Wait.HOLD) and approval is not None:
        who = ", ".join(sorted(approval.approvers)) or "Approvers"
        until = f" until {approval.expires_at:%Y-%m-%d %H:%M:%S} UTC" if approval.expires_at else ""
        what = {Wait.APPROVAL: "approval", Wait.ESCALATION: "a decision on its failure (retry, skip or abort)",
                Wait.HOLD: "a governance hold to be approved"}[node.wait]
        return f"waiting for {what} by {who}{until}"
    return {
        Wait.QUEUED: "ready: waiting for a free concurrency slot",
        Wait.REDISPATCH: "about to be dispatched again",
        Wait.RETRY: f"waiting to retry after attempt {node.attempt} failed" + (f": {node.error}" if node.error else ""),
        Wait.GATE_RETRY: "blocked by a governance gate" + (f" ({node.error_code})" if node.error_code else "")
                         + (f": {node.error}" if node.error else "") + "; retrying after a backoff",
        Wait.CHILD: "waiting for its sub-workflow run" + (f" {node.child_run}" if node.child_run else ""),
    }.get(node.wait, f"waiting ({node.wait})")


def run_view(run: Run) -> RunView:
    # The last event id first, the rows after: a round that commits in between is then replayed by the
    # socket (setting the same values again) instead of being counted as shown when the rows predate it.
    last = RunEvent.objects.filter(run=run).aggregate(last=Max("id"))["last"] or 0
    run.refresh_from_db(fields=["status", "error", "error_code", "finished_at"])
    workflow, _ = compile_version(run.version)
    rows = {row.step: row for row in StepResult.objects.filter(run=run)}
    pending = {a.step: a for a in Approval.objects.filter(run=run, status=Approval.PENDING)}
    children = dict(Run.objects.filter(parent=run).values_list("parent_step", "pk"))
    carried = carried_steps(run)
    nodes = []
    for spec in workflow.steps:
        node = Node(id=spec.id, kind=spec.kind, deps=tuple(spec.deps), child_run=children.get(spec.id),
                    carried=spec.id in carried, name=spec.model.name or "", phase=spec.model.phase or "")
        row = rows.get(spec.id)
        if row is not None:
            node.status, node.wait, node.attempt = row.status, row.wait, row.attempt
            node.cost, node.tokens, node.error, node.error_code = row.cost, row.tokens, row.error, row.error_code
            if row.started_at and row.finished_at:
                node.seconds = (row.finished_at - row.started_at).total_seconds()
        nodes.append(node)
    by_id = {node.id: node for node in nodes}
    for node in nodes:
        node.why = why_not_running(node, by_id, pending.get(node.id))
    return RunView(run=run, nodes=nodes, last_event_id=last, approvals=list(pending.values()),
                   phases=list(workflow.document.phases))
