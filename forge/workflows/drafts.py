"""What the editor's draft requests do and answer, for the console's editor endpoints and the API alike: reading a
draft, keeping typed text, applying a typed patch, and the diffs of versions and of a draft (one way each).

Every refusal is an `EditRefused` of its kind (forge.errors); nothing is written when one is raised.
"""

from __future__ import annotations

from typing import Any

from engine.edit import PatchError, apply_patch, outline, unified_diff
from engine.edit.summary import version_summary
from engine.yamlload import Loaded, YamlLoadError, load
from forge.workflows import editing, placements
from forge.workflows.editing import EditNotFound, EditRefused, EditStale, patch_refusal
from forge.workflows.models import Draft, Workflow


def text_state(draft: Draft, text: str, loaded: Loaded | None = None) -> dict[str, Any]:
    """What an editor redraws from: validation and the outline of `text`, from one bounded load of it (`loaded`,
    when the patch made it): on a 1 MiB text each load costs a fifth of a second."""
    if loaded is None:
        try:
            loaded = load(text)
        except YamlLoadError:
            pass  # each reports it on its own terms
    problems, valid = editing.text_problems(text, loaded)
    return {"problems": problems, "valid": valid, "outline": outline(text, loaded), "dirty": editing.dirty(draft)}


def draft_view(draft: Draft) -> dict[str, Any]:
    """The draft as its owner reads it: text, revision, workflow and versions, placements and its text's state."""
    latest = draft.workflow.latest_version() if draft.workflow_id else None
    return {"id": draft.pk, "text": draft.text, "revision": draft.revision,
            "workflow": draft.workflow.name if draft.workflow_id else None,
            "base_version": draft.base_version.number if draft.base_version else None,
            "latest_version": latest.number if latest else None,
            "placements": placements.draft_placements(draft), **text_state(draft, draft.text)}


def require_newer(draft: Draft, revision: int) -> None:
    """Refuse (Stale) a request whose revision is not newer than the draft's: a later one was kept already."""
    if revision <= draft.revision:
        raise EditStale(f"revision {revision} is not newer than the draft's {draft.revision}",
                        code="stale_revision", revision=draft.revision)


def _write(user, draft: Draft, text: str, revision: int) -> None:
    if not editing.draft_write(user, draft, text, revision):
        require_newer(editing.draft_of(user, draft.pk), revision)  # a newer write came in between


def draft_type(user, draft: Draft, text, revision) -> dict[str, Any]:
    """Keep `text` as the draft's at `revision`, and answer the new revision with the text's problems and outline."""
    text = editing.storable(text, "the text")
    require_newer(draft, editing.revision_of(revision, draft))
    _write(user, draft, text, revision)
    return {"revision": draft.revision, **text_state(draft, text)}


def draft_patch(user, draft: Draft, text, revision, op) -> dict[str, Any]:
    """Apply the typed patch `op` to `text` (a page's text, which may be ahead of the draft's) and keep the result
    at `revision`: the new text, the changed ranges, ids a paste renamed, the revision and the new text's state."""
    text = editing.storable(text, "the text")
    require_newer(draft, editing.revision_of(revision, draft))
    try:
        patched = apply_patch(text, op)
    except PatchError as exc:
        raise patch_refusal(exc) from None
    except RecursionError:  # an op nested deeper than the patch engine walks
        raise EditRefused("the patch's value nests too deep", code="bad_value") from None
    new_text = editing.storable(patched.text, "the patched text")
    _write(user, draft, new_text, revision)
    if op.get("op") == "step.rename" and op["id"] != op["to"]:  # applied, so both are step ids
        placements.placement_copy(user, draft, op["id"], op["to"])
    return {"text": new_text, "changes": patched.changes, "renamed": patched.renamed, "revision": draft.revision,
            **text_state(draft, new_text, patched.loaded)}


def versions_diff(workflow: Workflow, old: int, new: int) -> dict[str, Any]:
    """The engine's anchored diff from version `old` to version `new` of `workflow`, as text and step by step."""
    numbers = [old, new]
    versions = {v.number: v for v in workflow.versions.filter(number__in=numbers)}
    missing = [n for n in numbers if n not in versions]
    if missing:
        raise EditNotFound(f"{workflow.name!r} has no version {missing[0]}", code="not_found")
    a, b = versions[old], versions[new]
    return {"diff": unified_diff(a.source, b.source, f"v{a.number}", f"v{b.number}"),
            "summary": version_summary(a.source, b.source)}


def draft_diff(draft: Draft, text) -> str:
    """The Save dialog's diff: `text` against the draft's base version (a blank text for a new workflow)."""
    text = editing.storable(text, "the text")
    base = draft.base_version
    return unified_diff(base.source if base else "", text, f"v{base.number}" if base else "blank", "draft")
