"""Where people put steps on a workflow's graph, by step id (not part of the YAML: moving changes no version).

A saved workflow keeps them in StepPlacement rows, shared by the workflow page, the editor and the run view; a
workflow not saved yet keeps them in its draft, and they become rows at its first save. Only a step of the
draft's text may be placed, so the rows stay bounded by the steps a workflow has had.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.validation import STEP_ID
from engine.yamlload import YamlLoadError, load
from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import BadRequest, Forbidden, Invalid
from forge.workflows import layouts
from forge.workflows.layouts import LIMIT, _coordinate as coordinate
from forge.workflows.models import Draft, StepPlacement, Workflow

MAX_ROWS = 5_000  # past this, a workflow's placements of steps it no longer has are forgotten


def step_ids(text: str) -> list[str] | None:
    """The ids of the steps of `text` (bounded load), or None when it does not load."""
    try:
        document = load(text).value
    except YamlLoadError:
        return None
    steps = document.get("steps")
    if not isinstance(steps, list):
        return []
    return [step["id"] for step in steps if isinstance(step, dict) and isinstance(step.get("id"), str)]


def draft_placements(draft: Draft) -> dict[str, dict[str, float]]:
    """step id -> {"x", "y"} for the draft's graph: its workflow's, or for a workflow not saved yet its own."""
    return layouts.placements_of(draft.workflow_id) if draft.workflow_id else dict(draft.placements)


class PlacementRefused(BadRequest):
    """Positions that are not {step id: {"x", "y"}} as the editor sends them; nothing is kept."""


class PlacementInvalid(Invalid, PlacementRefused):
    """Positions of the right shape for steps the draft does not have (or a draft whose text does not load)."""


def cleaned(positions: Any, known: list[str] | None) -> dict[str, dict[str, float]]:
    """`positions` checked: {step id: {"x": number, "y": number}}, each id a step of the text."""
    if not isinstance(positions, dict) or not positions:
        raise PlacementRefused('positions is an object {"step id": {"x": number, "y": number}}', code="bad_request")
    if known is None:
        raise PlacementInvalid("the draft's text does not load, so it has no steps to place", code="not_parsed")
    if len(positions) > len(known):
        raise PlacementRefused(f"{len(positions)} positions for {len(known)} steps", code="bad_request")
    kept = {}
    steps = set(known)
    for step, at in positions.items():
        if not STEP_ID.fullmatch(step):
            raise PlacementRefused(f"{step[:64]!r} is not a step id", code="bad_id")
        if step not in steps:
            raise PlacementInvalid(f"the draft has no step {step!r}", code="unknown_step")
        if not isinstance(at, dict) or set(at) != {"x", "y"} or not all(coordinate(at[k]) for k in ("x", "y")):
            raise PlacementRefused(f'step {step!r}: a position is {{"x": number, "y": number}}, '
                                   f"each finite and within {LIMIT:g}", code="bad_value")
        kept[step] = {"x": float(at["x"]), "y": float(at["y"])}
    return kept


def placements_set(user, draft: Draft, positions: Any) -> int:
    """Keep where the person put these steps of the draft's workflow; the number kept. One audit event."""
    require_edit(user)
    kept = cleaned(positions, step_ids(draft.text))
    with transaction.atomic():
        if draft.workflow_id is None:
            _draft_merge(draft, kept)
        else:
            _rows(user, draft.workflow, kept)
        audit(codes.LAYOUT_PLACED, user=user, target=draft_target(draft), detail={"steps": sorted(kept)[:100],
                                                                               "count": len(kept)})
    return len(kept)


def placement_copy(user, draft: Draft, old: str, new: str) -> bool:
    """A renamed step keeps its place: the old id's position is copied to the new id (the saved versions still
    name the old one, so its row stays). False when the old id had no position."""
    require_edit(user)
    with transaction.atomic():
        if draft.workflow_id is None:
            at = _draft_merge(draft, {}).get(old)
            if at is None:
                return False
            _draft_merge(draft, {new: at})
        else:
            row = StepPlacement.objects.filter(workflow=draft.workflow, step_id=old).first()
            if row is None:
                return False
            _rows(user, draft.workflow, {new: {"x": row.x, "y": row.y}})
        audit(codes.LAYOUT_PLACED, user=user, target=draft_target(draft), detail={"steps": [new], "count": 1,
                                                                               "renamed": {old: new}})
    return True


def placements_adopt(user, draft: Draft, workflow: Workflow, text: str) -> None:
    """At a new workflow's first save its draft's placements become its rows (those of steps it has)."""
    steps = set(step_ids(text) or ())
    kept = {step: at for step, at in (draft.placements or {}).items() if step in steps}
    if kept:
        _rows(user, workflow, kept)


def require_edit(user) -> None:
    """Every editor write's check (forge.workflows.editing's too: it imports this module, not the reverse)."""
    if not can(user, "workflow.edit"):
        raise Forbidden("you may not edit workflows")


def _draft_merge(draft: Draft, kept: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The draft's placements with `kept` added, read under the row's lock: two requests of one page at once
    (two nodes dropped in quick succession) each add their own instead of the later one undoing the earlier."""
    current = Draft.objects.select_for_update().filter(pk=draft.pk).values_list("placements", flat=True).first()
    draft.placements = {**(current or {}), **kept}
    if kept:
        Draft.objects.filter(pk=draft.pk).update(placements=draft.placements)
    return draft.placements


def _rows(user, workflow: Workflow, kept: dict[str, dict[str, float]]) -> None:
    now = timezone.now()
    StepPlacement.objects.bulk_create(
        [StepPlacement(workflow=workflow, step_id=step, x=at["x"], y=at["y"], placed_by=user, placed_at=now)
         for step, at in kept.items()],
        update_conflicts=True, unique_fields=["workflow", "step_id"], update_fields=["x", "y", "placed_by",
                                                                                    "placed_at"])
    if StepPlacement.objects.filter(workflow=workflow).count() > MAX_ROWS:
        latest = workflow.latest_version()
        current = set(step_ids(latest.source) or ()) if latest else set()
        StepPlacement.objects.filter(workflow=workflow).exclude(step_id__in=current | set(kept)).delete()


def draft_target(draft: Draft) -> str:
    return f"workflow:{draft.workflow.name}" if draft.workflow_id else f"draft:{draft.pk}"

