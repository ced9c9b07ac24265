"""The editor's pages: a new workflow (blank, from an example, pasted or uploaded), the editor of a draft, a
workflow's versions with their diffs and *Restore*. The editor's reads and writes after the page has loaded are
the JSON API's (forge/console/views/editor_api.py); these pages only open drafts and show history."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from forge.accounts.roles import can
from forge.console.views.actions import sentence
from forge.console.views.pages import require_view
from forge.errors import BadRequest, ForgeError, Invalid, NotFound, TooLarge
from forge.workflows import editing
from forge.workflows.models import Draft, Workflow
from forge.workflows.services import MAX_SOURCE_BYTES

EXAMPLES = settings.BASE_DIR / "examples"
BLANK = "name: {name}\ndescription: \"\"\nsteps: []\n"
SOURCES = ("blank", "example", "workflow", "paste", "upload")


def _examples() -> list[str]:
    return sorted(path.stem for path in EXAMPLES.glob("*.yaml"))


def _blank() -> str:
    taken = set(Workflow.objects.filter(name__startswith="new_workflow").values_list("name", flat=True))
    n = 1
    while (name := "new_workflow" if n == 1 else f"new_workflow_{n}") in taken:
        n += 1
    return BLANK.format(name=name)


class Refused(BadRequest):
    """What the new-workflow form cannot start from, in words for the person who sent it."""


class RefusedMissing(NotFound, Refused):
    """The example or saved workflow chosen is not there."""


class RefusedTooLarge(TooLarge, Refused):
    """The text is past a workflow's bound."""


class RefusedInvalid(Invalid, Refused):
    """The file or text given is no YAML text (not UTF-8, empty, NUL bytes)."""


def _text(request) -> str:
    """The text a new workflow starts from, as the form chose it."""
    source = request.POST.get("source", "")
    if source not in SOURCES:
        raise Refused("choose how the workflow starts: blank, an example, a saved workflow, pasted or uploaded YAML")
    if source == "blank":
        return _blank()
    if source == "example":
        name = request.POST.get("example", "")
        if name not in _examples():
            raise RefusedMissing("there is no such example")
        return (EXAMPLES / f"{name}.yaml").read_bytes().decode("utf-8")  # as the file is: its line endings too
    if source == "workflow":
        workflow = Workflow.objects.filter(name=request.POST.get("workflow", "")).first()
        version = workflow.latest_version() if workflow else None
        if version is None:
            raise RefusedMissing("there is no saved workflow by that name")
        return version.source
    if source == "paste":  # a browser sends a textarea's lines ended by CRLF, whatever was pasted: LF is the norm
        data = request.POST.get("yaml", "").replace("\r\n", "\n").encode("utf-8")
    else:
        upload = request.FILES.get("file")
        if upload is None:
            raise Refused("choose a file to upload")
        if upload.size > MAX_SOURCE_BYTES:
            raise RefusedTooLarge(f"the file is {upload.size:,} bytes; a workflow is at most {MAX_SOURCE_BYTES:,} bytes")
        data = upload.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise RefusedTooLarge(f"the text is {len(data):,} bytes; a workflow is at most {MAX_SOURCE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedInvalid(f"the file is not UTF-8 text (byte {exc.start + 1} cannot be read): upload a YAML "
                             "file") from None
    if not text.strip():
        raise RefusedInvalid("the YAML is empty: paste or upload a workflow, or start from blank")
    if "\x00" in text:
        raise RefusedInvalid("the file holds NUL bytes: it is not a YAML text file")
    return text


@login_required
def workflow_new(request):
    """Choose what a new workflow starts from; the choice becomes a draft, opened in the editor."""
    require_view(request)
    editing.require_edit(request.user)
    status = 200
    if request.method == "POST":
        try:
            draft = editing.draft_new(request.user, _text(request))
        except ForgeError as exc:  # the form's, the editor's, Forbidden
            messages.error(request, sentence(exc))
            status = 400
        else:
            return redirect("console:editor_new", draft.pk)
    return render(request, "console/workflow_new.html", {
        "nav": "workflows", "examples": _examples(), "max_bytes": MAX_SOURCE_BYTES,
        "workflows": Workflow.objects.filter(versions__isnull=False).distinct().order_by("name"),
        "chosen": request.POST.get("source", "blank"), "pasted": request.POST.get("yaml", ""),
    }, status=status)


@login_required
def editor_new(request, draft_id: int):
    """The editor of a workflow not saved yet: the person's own draft, made by the new-workflow page."""
    require_view(request)
    editing.require_edit(request.user)
    draft = Draft.objects.filter(pk=draft_id, user=request.user).select_related("workflow").first()
    if draft is None:
        raise Http404("you have no draft by this number")
    if draft.workflow is not None:  # saved since: its editor is the workflow's
        return redirect("console:editor", draft.workflow.name)
    return _editor(request, draft, None)


@login_required
def workflow_edit(request, name: str):
    """The editor of a saved workflow, on the person's draft of it (made from the latest version if none)."""
    require_view(request)
    editing.require_edit(request.user)
    workflow = get_object_or_404(Workflow, name=name)
    return _editor(request, editing.draft_open(request.user, workflow), workflow)


def _editor(request, draft: Draft, workflow: Workflow | None):
    base = draft.base_version
    return render(request, "console/editor.html", {
        "nav": "workflows", "draft": draft, "workflow": workflow,
        "base_number": base.number if base else None,
        "api": reverse("console:editor_draft", args=[draft.pk]),
    })


PER_PAGE = 50  # versions listed on a page of the history, newest first


@login_required
def workflow_versions(request, name: str):
    """The versions, newest first, a page of them at a time (who, when, the message); the diff of the two chosen
    (any two, by number) is read from the diff endpoint."""
    require_view(request)
    workflow = get_object_or_404(Workflow, name=name)
    # not their texts (up to 1 MiB each): the diff endpoint reads the two compared
    listed = workflow.versions.select_related("created_by").defer("source").order_by("-number")
    latest = listed.values_list("number", flat=True).first()
    paginator = Paginator(listed, PER_PAGE)
    pages = paginator.num_pages
    page = _page(request.GET.get("page"), pages)
    versions = list(paginator.page(page))
    asked = [request.GET.get(key, "") for key in ("a", "b")]
    chosen = [_number(value, workflow) for value in asked]
    b = chosen[1] or latest
    a = chosen[0] or workflow.versions.filter(number__lt=b or 0).order_by("-number").values_list(
        "number", flat=True).first()
    unknown = [value for value, number in zip(asked, chosen) if value and number is None]
    return render(request, "console/versions.html", {
        "nav": "workflows", "workflow": workflow, "versions": versions, "latest": latest, "a": a, "b": b,
        "unknown": unknown, "page": page, "pages": pages, "may_edit": can(request.user, "workflow.edit"),
    })


def _page(value: str | None, pages: int) -> int:
    """The page asked for when the history has it; anything else (none, 0, -1, text, past the last): the first."""
    if value and re.fullmatch(r"[0-9]{1,9}", value) and 1 <= int(value) <= pages:
        return int(value)
    return 1


def _number(value: str | None, workflow: Workflow) -> int | None:
    """A version number from a query or form when the workflow has that version (anything else: None)."""
    if value and re.fullmatch(r"[0-9]{1,9}", value) and workflow.versions.filter(number=int(value)).exists():
        return int(value)
    return None


@login_required
@require_POST
def version_restore(request, name: str):
    """An old version (the form's `version`) saved again as the newest, with the person's message."""
    require_view(request)
    workflow = get_object_or_404(Workflow, name=name)
    editing.require_edit(request.user)
    number = _number(request.POST.get("version"), workflow)
    if number is None:
        raise Http404("this workflow has no such version")
    try:
        version = editing.version_restore(request.user, workflow, number, request.POST.get("message", "")[:2000])
    except editing.EditRefused as exc:
        messages.error(request, sentence(exc))
    else:
        messages.success(request, f"v{number} restored as v{version.number}.")
    return redirect("console:workflow_versions", workflow.name)
