"""The editor's services: a person's draft of a workflow, saving it as a new version, restoring an old one.

A draft is private scratch (its text writes are not audited); creating and discarding one, saving and restoring
are, in the same transaction as the change. Every write needs `workflow.edit`; a draft is only its owner's.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from engine.edit.errors import PatchError
from engine.edit.merge import merge3way
from engine.expressions import RESERVED_ROOTS
from engine.expressions.nodes import FUNCTIONS
from engine.validation import UNTIL_LOCALS, Report
from engine.yamlload import Loaded
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import BadRequest, Conflict, Invalid, NotFound, Stale, TooLarge
from forge.governance.models import Agent
from forge.request_guard import IN_VALUE
from forge.workflows import placements
from forge.workflows.models import Draft, StepLibraryEntry, Workflow, WorkflowVersion
from forge.workflows.placements import require_edit
from forge.workflows.services import MAX_SOURCE_BYTES, version_append, workflow_validate

MAX_MESSAGE = WorkflowVersion._meta.get_field("message").max_length
MAX_REVISION = 2**63 - 1
# How far a page's revision may run ahead of the stored one: each request the page sends is the next one, so a
# page is never that far ahead; a larger one would leave the draft no newer revision to be written at.
MAX_REVISION_AHEAD = 1_000_000
# Drafts of workflows never saved that one person keeps at once: each holds up to a MiB of text.
MAX_NEW_DRAFTS = 50


class EditRefused(BadRequest):
    """A request the editor refuses, changing nothing: `code` and `message` for the page; its kind (forge.errors)
    says the HTTP status. Raised as is, the request was malformed (a field of the wrong type or form)."""


class EditInvalid(Invalid, EditRefused):
    """Well-formed, but this draft or workflow cannot take it (a patch making a cycle, another workflow's name)."""


class EditNotFound(NotFound, EditRefused):
    """No such draft of the person's, or no such version."""


class EditConflict(Conflict, EditRefused):
    """The workflow or the person's drafts do not allow it now."""


class EditStale(Stale, EditRefused):
    """The page's revision or base version is older than the stored one."""


class EditTooLarge(TooLarge, EditRefused):
    """A text past its bound."""


class SaveInvalid(EditInvalid):
    """The text is not a valid workflow: it is saved only once validation finds no problem."""

    def __init__(self, report: Report):
        count = len(report.problems)
        super().__init__(f"the workflow has {count} problem{'' if count == 1 else 's'}; fix them before saving",
                         code="invalid", problems=problems_json(report))


class SaveConflict(EditStale):
    """The draft was based on an older version than the latest: `merge` is the three-way merge to resolve."""

    def __init__(self, merge: dict):
        super().__init__(f"version {merge['theirs_version']} was saved since this draft's base "
                         f"version; merge the changes, then save", code="stale_base", merge=merge)


# The patch engine's refusals that a well-formed op meets in this text; the others are malformed ops.
PATCH_INVALID = frozenset({"not_parsed", "unknown_step", "duplicate_id", "implicit_edge", "cycle", "self_edge",
                           "use_rename"})


def patch_refusal(exc: PatchError) -> EditRefused:
    """The patch engine's refusal as the editor's, of its kind."""
    kind = (EditTooLarge if exc.code == "too_large" else EditInvalid if exc.code in PATCH_INVALID
            else EditRefused)
    return kind(exc.message, code=exc.code)


@dataclass(frozen=True)
class Saved:
    version: WorkflowVersion
    created: bool  # False: the text was the latest version's already, nothing was added


def storable(text, what: str, limit: int = MAX_SOURCE_BYTES) -> str:
    """`text` when it is a string the database keeps as is (UTF-8, no NUL) within `limit` bytes."""
    if not isinstance(text, str):
        raise EditRefused(f"{what} must be a string", code="bad_request")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise EditRefused(f"{what} holds a lone surrogate, which is no character", code="bad_value") from None
    if size > limit:
        raise EditTooLarge(f"{what} is {size:,} bytes; the limit is {limit:,} bytes", code="too_large")
    if "\x00" in text:
        raise EditRefused(f"{what} holds a NUL character, which no text of Forge keeps", code="bad_value")
    return text


def revision_of(value, draft: Draft) -> int:
    """The revision a page sent for `draft`: a positive integer at most MAX_REVISION_AHEAD past the stored one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_REVISION:
        raise EditRefused("revision must be a positive integer", code="bad_request")
    if value > draft.revision + MAX_REVISION_AHEAD:
        raise EditRefused(f"revision {value} is more than {MAX_REVISION_AHEAD:,} past the draft's "
                          f"{draft.revision}; reload the editor", code="bad_value")
    return value


def message_of(message) -> str:
    """What the saver said of a version, as kept: one string of at most MAX_MESSAGE characters."""
    message = storable(message, "the message", MAX_MESSAGE * 4).strip()
    if IN_VALUE.search(message):  # as every form's free text (forge/request_guard.py): tabs and line breaks only
        raise EditRefused("the message holds a control character; write it as plain text", code="bad_value")
    if len(message) > MAX_MESSAGE:
        raise EditRefused(f"the message is longer than {MAX_MESSAGE} characters", code="bad_value")
    return message


def problems_json(report: Report) -> list[dict]:
    """What validation found, errors then warnings, each with its severity."""
    return ([{**p.to_json(), "severity": "error"} for p in report.problems]
            + [{**w.to_json(), "severity": "warning"} for w in report.warnings])


def dirty(draft: Draft) -> bool:
    """Whether the draft holds text no version has: unsaved work."""
    return draft.base_version is None or draft.text != draft.base_version.source


def draft_of(user, draft_id: int) -> Draft:
    """The person's own draft; another person's is not found, as a missing one."""
    draft = Draft.objects.select_related("workflow", "base_version").filter(pk=draft_id, user=user).first()
    if draft is None:
        raise EditNotFound("you have no draft with this id", code="not_found")
    return draft


def draft_open(user, workflow: Workflow) -> Draft:
    """The person's draft of `workflow`, started from its latest version when there is none."""
    require_edit(user)
    latest = workflow.latest_version()
    for _ in range(2):  # the same person opening the editor twice at once: the second finds the first's
        try:
            with transaction.atomic():
                draft, created = Draft.objects.select_related("workflow", "base_version").get_or_create(
                    user=user, workflow=workflow,
                    defaults={"base_version": latest, "text": latest.source if latest else ""})
                if created:  # as draft_new's and draft_discard's: the trail shows each draft begin and end
                    audit(codes.DRAFT_CREATED, user=user, target=placements.draft_target(draft),
                          detail={"draft": draft.pk, "base_version": latest.number if latest else None})
                return draft
        except IntegrityError:
            continue
    raise EditConflict("the draft changed while it was opened; try again", code="conflict")


def draft_new(user, text: str) -> Draft:
    """A draft of a workflow not saved yet, holding `text` (blank, an example, pasted or uploaded)."""
    require_edit(user)
    storable(text, "the text")
    with transaction.atomic():
        # The person's row locked: two new drafts made at once are counted one after the other.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        unsaved = Draft.objects.filter(user=user, workflow__isnull=True)
        if unsaved.count() >= MAX_NEW_DRAFTS:
            oldest = unsaved.order_by("updated_at", "pk").first()
            raise EditConflict(f"you have {MAX_NEW_DRAFTS} drafts of new workflows, the limit: "
                               f"open one and discard it (Discard draft) before starting another; your oldest is at "
                               f"{reverse('console:editor_new', args=[oldest.pk])}", code="too_many_drafts")
        draft = Draft.objects.create(user=user, text=text)
        audit(codes.DRAFT_CREATED, user=user, target=f"draft:{draft.pk}", detail={"bytes": len(text.encode())})
    return draft


def draft_write(user, draft: Draft, text: str, revision: int) -> bool:
    """Keep the page's text as the draft's; ignored (False) when `revision` is not newer than the stored one,
    so a late write of older text never overwrites newer text."""
    require_edit(user)
    storable(text, "the text")
    revision_of(revision, draft)
    written = Draft.objects.filter(pk=draft.pk, user=user, revision__lt=revision).update(
        text=text, revision=revision, updated_at=timezone.now())
    if written:
        draft.text, draft.revision = text, revision
    return bool(written)


def draft_discard(user, draft: Draft) -> None:
    """Forget the draft: the workflow stays at its latest version."""
    require_edit(user)
    with transaction.atomic():
        if not Draft.objects.filter(pk=draft.pk, user=user).delete()[0]:
            raise EditNotFound("you have no draft with this id", code="not_found")
        audit(codes.DRAFT_DISCARDED, user=user, target=placements.draft_target(draft),
              detail={"draft": draft.pk, "base_version": draft.base_version.number if draft.base_version else None})


def draft_save(user, draft: Draft, text: str, message: str, base_version: int | None) -> Saved:
    """Save `text` as the next version of the draft's workflow (or a new workflow), when it is valid and based on
    the latest version; the draft is then based on the saved version.

    Raises SaveInvalid (problems), SaveConflict (a newer version was saved: the merge), EditRefused."""
    require_edit(user)
    storable(text, "the text")
    message = message_of(message)
    if base_version is not None and (isinstance(base_version, bool) or not isinstance(base_version, int)):
        raise EditRefused("base_version must be a version number or null", code="bad_request")
    report = workflow_validate(source=text)
    if not report.valid:
        raise SaveInvalid(report)
    document = report.workflow.document
    try:
        with transaction.atomic():
            saved = (_save_new(user, draft, text, message, document, base_version) if draft.workflow_id is None
                     else _save_next(user, draft, text, message, document, base_version))
            Draft.objects.filter(pk=draft.pk).update(workflow=saved.version.workflow, base_version=saved.version,
                                                     text=text, placements={}, updated_at=timezone.now())
    except IntegrityError:  # someone made a workflow of this name meanwhile, or numbered the same version
        if draft.workflow_id is None:
            raise _name_taken(document.name) from None
        raise EditConflict("the workflow changed while it was being saved; try again", code="conflict") from None
    except _Stale as stale:  # merged once the workflow's lock is let go
        raise SaveConflict(merge_payload(stale.base, stale.latest, text)) from None
    draft.workflow, draft.base_version, draft.text, draft.placements = (saved.version.workflow, saved.version,
                                                                        text, {})
    return saved


def _save_new(user, draft: Draft, text: str, message: str, document, base_version) -> Saved:
    if base_version is not None:
        raise EditRefused("a workflow not saved yet has no base version: send null", code="bad_request")
    if Workflow.objects.filter(name=document.name).exists():
        raise _name_taken(document.name)
    workflow = Workflow.objects.create(name=document.name, description=document.description or "", created_by=user)
    version = version_append(user=user, workflow=workflow, source=text, description="", message=message,
                             created=True)
    placements.placements_adopt(user, draft, workflow, text)
    return Saved(version, True)


def _name_taken(name: str) -> EditConflict:
    return EditConflict(f"a workflow named {name!r} exists already; give this one another name, or edit that one",
                        code="name_taken")


def _save_next(user, draft: Draft, text: str, message: str, document, base_version) -> Saved:
    # NO KEY UPDATE, as forge.workflows.services: numbering versions must not wait on runs.
    workflow = Workflow.objects.select_for_update(no_key=True).get(pk=draft.workflow_id)
    if document.name != workflow.name:
        raise EditInvalid(f"this is workflow {workflow.name!r}: its name stays; a workflow of "
                          f"another name is a new workflow (New workflow)", code="name_changed")
    latest = workflow.latest_version()
    if base_version is None or latest is None or not 0 < base_version <= latest.number:
        raise EditRefused(f"base_version must be a version of {workflow.name!r} (1 to "
                          f"{latest.number if latest else 0})", code="bad_base")
    if text == latest.source:
        return Saved(latest, False)
    if base_version != latest.number:
        raise _Stale(workflow.versions.get(number=base_version).source, latest)
    version = version_append(user=user, workflow=workflow, source=text, description=document.description or "",
                             message=message, created=False)
    return Saved(version, True)


class _Stale(Exception):
    def __init__(self, base: str, latest: WorkflowVersion):
        self.base, self.latest = base, latest


def merge_payload(base: str, latest: WorkflowVersion, mine: str) -> dict:
    merged = merge3way(base, latest.source, mine)
    return {"base": base, "theirs": latest.source, "mine": mine, "merged": merged.text, "clean": merged.clean,
            "conflicts": merged.conflicts, "theirs_version": latest.number}


def version_restore(user, workflow: Workflow, number: int, message: str = "") -> WorkflowVersion:
    """Make version `number`'s text the newest version of `workflow` (audited as a save, with the message)."""
    require_edit(user)
    message = message_of(message)
    with transaction.atomic():
        workflow = Workflow.objects.select_for_update(no_key=True).get(pk=workflow.pk)
        old = workflow.versions.filter(number=number).first()
        if old is None:
            raise EditNotFound(f"{workflow.name!r} has no version {number}", code="not_found")
        latest = workflow.latest_version()
        if old.pk == latest.pk:
            raise EditConflict(f"version {number} is the latest version already", code="unchanged")
        if old.content_hash == latest.content_hash:  # restored before: a save of the latest text adds none either
            raise EditConflict(f"the latest version, v{latest.number}, holds version {number}'s text already",
                               code="unchanged")
        report = workflow_validate(source=old.source)
        if not report.valid:  # today's step library or agents may refuse what it once accepted
            raise SaveInvalid(report)
        return version_append(user=user, workflow=workflow, source=old.source,
                              description=report.workflow.document.description or "",
                              message=message or f"restored version {number}", created=False)


def text_problems(text: str, loaded: Loaded | None = None) -> tuple[list[dict], bool]:
    """Validation of `text` as `forge validate` does it: (problems with severities, valid)."""
    report = workflow_validate(source=text, loaded=loaded)
    return problems_json(report), report.valid


def completions() -> dict[str, list[str]]:
    """What the YAML pane completes besides the schema's keys: this installation's agents and library entries, and
    the names an expression may start with (roots, functions, and the locals of criteria and loops)."""
    return {"agents": list(Agent.objects.order_by("name").values_list("name", flat=True)),
            "library": list(StepLibraryEntry.objects.order_by("name").values_list("name", flat=True)),
            "expressions": sorted(RESERVED_ROOTS) + sorted(FUNCTIONS) + sorted(UNTIL_LOCALS)}
