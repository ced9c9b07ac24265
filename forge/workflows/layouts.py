"""Where a workflow's steps are drawn. Two owners, one rule: a person's placements (StepPlacement, by step id,
per workflow) are the truth for every page that draws the workflow; the positions ELK computed for the steps
nobody placed are a cache kept by the version's content hash (GraphLayout, written once by the first browser)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import BadRequest, Forbidden
from forge.runs.compiled import new_run_workflow
from forge.workflows.models import GraphLayout, StepPlacement, WorkflowVersion

LIMIT = 1e7  # a coordinate further out than this is no drawing


class LayoutRejected(BadRequest):
    """Positions that are no layout of the version's graph; nothing is kept."""


def layout_of(content_hash: str) -> dict[str, Any] | None:
    return GraphLayout.objects.filter(content_hash=content_hash).values_list("positions", flat=True).first()


def placements_of(workflow_id: int | None) -> dict[str, dict[str, float]]:
    """Step id -> {"x", "y"} where people put the workflow's steps (steps no version has any more included:
    a page draws the ones its version has)."""
    if workflow_id is None:
        return {}
    rows = StepPlacement.objects.filter(workflow_id=workflow_id).values_list("step_id", "x", "y")
    return {step: {"x": x, "y": y} for step, x, y in rows}


def layout_save(*, user, content_hash: str, positions: Any) -> bool:
    """Keep `positions` for the versions with `content_hash`, unless a layout is kept already; True if kept.

    Positions name steps of the version's graph and nothing else, each with finite x and y: the steps a person
    placed are not laid out, so a page sends the others only (at least one)."""
    if not can(user, "run.view"):
        raise Forbidden("you are in no group of this console")
    version = WorkflowVersion.objects.filter(content_hash=content_hash).first()
    if version is None:
        raise WorkflowVersion.DoesNotExist("no workflow version has this content hash")
    steps = {step.id for step in new_run_workflow(version)[0].steps}
    if not isinstance(positions, dict) or not positions or not set(positions) <= steps:
        raise LayoutRejected("a layout gives positions to steps of the graph, and to nothing else")
    kept = {}
    for step, at in positions.items():
        if not isinstance(at, dict) or set(at) != {"x", "y"} or not all(_coordinate(at[k]) for k in ("x", "y")):
            raise LayoutRejected(f"step {step[:64]!r}: a position is {{\"x\": number, \"y\": number}}")
        kept[step] = {"x": float(at["x"]), "y": float(at["y"])}
    try:
        with transaction.atomic():
            GraphLayout.objects.create(content_hash=content_hash, positions=kept)
            # The console keeps the layout, not the person whose page drew it first: the system's act.
            audit(codes.LAYOUT_SAVED, target=f"workflow:{version.workflow.name}",
                  detail={"content_hash": content_hash, "steps": len(kept)})
    except IntegrityError:
        return False  # another page kept one first: the first layout stays
    return True


def _coordinate(value: Any) -> bool:
    # abs(value) < LIMIT compares exactly, where math.isfinite would turn a 4,000-digit integer into a float
    # and overflow; NaN and the infinities fail it too.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < LIMIT
