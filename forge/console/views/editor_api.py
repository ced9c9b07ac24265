"""The editor's JSON endpoints (/editor/...): every answer is JSON, every refusal `{"error": {"code", "message"}}`
with its kind's status (forge.errors.problem_of), and a refused request changes nothing.

Each request is bounded, as its CPU time is shared with every other request of the process (the GIL): the body
is at most 2 MiB and is refused by its Content-Length before it is read; a text is at most 1 MiB, and the patch
engine and the validator load it with the bounded loader first, which refuses the format's bombs before anything
else (ruamel included) sees them.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import JsonResponse, RawPostDataException
from django.urls import reverse

from engine.edit import PatchError, copy_steps
from engine.schema import lobsterx_schema
from forge.accounts.roles import can
from forge.errors import BadRequest, ForgeError, Forbidden, TooLarge, kind_of, problem_of
from forge.workflows import drafts, editing, placements
from forge.workflows.editing import EditNotFound, patch_refusal
from forge.workflows.models import Workflow

MAX_BODY_BYTES = 2 * 1_048_576
PREFIX = "/editor/"  # Django's CSRF and 400 pages answer JSON under it (forge/console/views/pages.py)


MAX_MESSAGE = 500  # a refusal's words: what the request held (every unknown key of a patch...) is not echoed whole


def refusal(status: int, code: str, message: str, **extra) -> JsonResponse:
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 1] + "…"
    return JsonResponse({"error": {"code": code, "message": message}, **extra}, status=status)


def refused(exc: ForgeError) -> JsonResponse:
    """`exc` as the editor's pages read a refusal: its status from the one table, its code (else its kind's)."""
    status, _ = problem_of(exc)
    return refusal(status, exc.code or kind_of(exc).slug, exc.message, **exc.extra)


def is_editor_api(request) -> bool:
    return request.path_info.startswith(PREFIX)


def endpoint(method: str, *, keys: dict[str, type | tuple] | None = None, write: bool = True):
    """A JSON endpoint: who may call it, its method, and its body's keys with their types (all required)."""
    def wrap(view):
        @login_required
        @functools.wraps(view)
        def answer(request, **kwargs):
            if request.method != method:
                return refusal(405, "method_not_allowed", f"this address takes {method}")
            if not can(request.user, "run.view"):
                return refused(Forbidden("you are in no group of this console"))
            if write and not can(request.user, "workflow.edit"):
                return refused(Forbidden("you may not edit workflows"))
            try:
                if "draft_id" in kwargs:  # before the body: a draft that is not the person's is 404 whatever is sent
                    kwargs["draft"] = editing.draft_of(request.user, kwargs.pop("draft_id"))
                if keys is not None:
                    kwargs["body"] = _body(request, keys)
                return view(request, **kwargs)
            except ForgeError as exc:  # the editor's, the placements', a service's Forbidden
                return refused(exc)
            except PermissionDenied as exc:  # Django's own, from code that raises no ForgeError
                return refusal(403, "forbidden", str(exc) or "you may not do this")
        return answer
    return wrap


def _body(request, keys: dict[str, type | tuple]) -> dict[str, Any]:
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    too_large = TooLarge(f"the body is larger than {MAX_BODY_BYTES // 1_048_576} MiB", code="too_large")
    if declared > MAX_BODY_BYTES:
        raise too_large
    try:
        raw = request.read(MAX_BODY_BYTES + 1)
    except RequestDataTooBig:
        raise too_large from None
    except (RawPostDataException, OSError):  # read as a form already, or the client went away mid-body
        raise BadRequest("the body could not be read; send it as JSON", code="bad_json") from None
    if len(raw) > MAX_BODY_BYTES:
        raise too_large
    if not keys and not raw.strip():
        return {}  # a bare post (discard)
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError; so is a 5,000-digit number
        raise BadRequest("the body is not JSON", code="bad_json") from None
    if not isinstance(body, dict):
        raise BadRequest("the body is a JSON object", code="bad_request")
    if set(body) != set(keys):
        unknown, missing = sorted(set(body) - set(keys)), sorted(set(keys) - set(body))
        said = "; ".join(part for part in (unknown and f"unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}",
                                           missing and f"missing key(s) {', '.join(missing)}") if part)
        raise BadRequest(f"{said}: the body has exactly {', '.join(sorted(keys))}", code="bad_request")
    for key, kind in keys.items():
        if not isinstance(body[key], kind) or isinstance(body[key], bool) and bool not in _kinds(kind):
            raise BadRequest(f"{key} must be {_names(kind)}", code="bad_request")
    return body


def _kinds(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind) -> str:
    words = {str: "a string", int: "an integer", dict: "an object", list: "a list", type(None): "null"}
    return " or ".join(words.get(k, k.__name__) for k in _kinds(kind))


# -- reading -------------------------------------------------------------------------------------------------------


@endpoint("GET", write=False)
def schema(request):
    return JsonResponse({**lobsterx_schema(), "x-forge": {"completions": editing.completions()}})


@endpoint("GET")
def draft_read(request, draft):
    return JsonResponse(drafts.draft_view(draft))


@endpoint("GET", write=False)
def diff(request):
    query = request.GET
    if not query.get("workflow"):
        raise BadRequest("name the workflow (?workflow=<name>&a=<n>&b=<n>)", code="bad_request")
    workflow = Workflow.objects.filter(name=query["workflow"][:128]).first()
    if workflow is None:
        raise EditNotFound("no workflow has this name", code="not_found")
    numbers = []
    for key in ("a", "b"):
        value = query.get(key, "")
        if not (value.isascii() and value.isdigit() and len(value) < 10):
            raise BadRequest(f"{key} must be a version number", code="bad_request")
        numbers.append(int(value))
    return JsonResponse(drafts.versions_diff(workflow, *numbers))


@endpoint("POST", keys={"text": str})
def draft_diff(request, draft, body: dict):
    """The Save dialog's diff: the page's text against the draft's base version (a blank text for a new
    workflow), by the engine's anchored diff, as the versions page shows one."""
    return JsonResponse({"diff": drafts.draft_diff(draft, body["text"])})


# -- writing -------------------------------------------------------------------------------------------------------


@endpoint("POST", keys={"text": str, "revision": int})
def draft_text(request, draft, body: dict):
    """The typing request: keep the text as the draft's, and answer its problems and outline."""
    return JsonResponse(drafts.draft_type(request.user, draft, body["text"], body["revision"]))


@endpoint("POST", keys={"text": str, "revision": int, "op": dict})
def draft_patch(request, draft, body: dict):
    """A graph or inspector gesture: the patch applied to the page's text (which may be ahead of the draft's)."""
    return JsonResponse(drafts.draft_patch(request.user, draft, body["text"], body["revision"], body["op"]))


@endpoint("POST", keys={"text": str, "ids": list})
def copy(request, body: dict):
    text = editing.storable(body["text"], "the text")
    ids = body["ids"]
    if not ids or len(ids) > 10_000 or not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids is a list of step ids", code="bad_request")
    try:
        return JsonResponse({"yaml": copy_steps(text, ids)})
    except PatchError as exc:
        raise patch_refusal(exc) from None


@endpoint("POST", keys={"positions": dict})
def draft_placements(request, draft, body: dict):
    return JsonResponse({"kept": placements.placements_set(request.user, draft, body["positions"])})


@endpoint("POST", keys={"text": str, "revision": int, "message": str, "base_version": (int, type(None))})
def draft_save(request, draft, body: dict):
    editing.revision_of(body["revision"], draft)
    saved = editing.draft_save(request.user, draft, body["text"], body["message"], body["base_version"])
    editing.draft_write(request.user, draft, body["text"], body["revision"])  # the page's revision, when newer
    version = saved.version
    return JsonResponse({"version": version.number, "workflow": version.workflow.name, "created": saved.created,
                         "url": reverse("console:workflow", args=[version.workflow.name])},
                        status=201 if saved.created else 200)


@endpoint("POST", keys={})
def draft_discard(request, draft, body: dict):
    editing.draft_discard(request.user, draft)
    url = reverse("console:workflow", args=[draft.workflow.name]) if draft.workflow_id else reverse(
        "console:workflows")
    return JsonResponse({"url": url})
