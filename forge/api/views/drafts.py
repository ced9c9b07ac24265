"""The API's draft operations: the editor's drafts and typed patches, for scripts (docs/editor.md). Each calls what
the console's editor endpoints call (forge/workflows/drafts.py, forge/workflows/editing.py); a draft is only its
owner's: another person's is not found."""

from __future__ import annotations

from django.urls import path
from rest_framework import serializers

from forge.api.base import ApiView, StrictSerializer
from forge.api.fields import Whole
from forge.api.routes import by_method
from forge.api.serializers_workflows import PatchOp, Text, TextStateOut, VersionOut
from forge.api.views.workflows import WRITE, workflow_named
from forge.errors import NotFound
from forge.workflows import drafts, editing
from forge.workflows.editing import MAX_REVISION
from forge.workflows.models import Draft

MAX_ID = 2**63 - 1


def draft_of(user, draft_id: int) -> Draft:
    if not 0 < draft_id <= MAX_ID:  # beyond the column's range the database would fail, not miss
        raise NotFound("You have no draft with this id.", code="not_found")
    return editing.draft_of(user, draft_id)


class DraftOut(TextStateOut):
    id = serializers.IntegerField()
    text = serializers.CharField()
    revision = serializers.IntegerField(help_text="grows with every write; a write must send a newer one")
    workflow = serializers.CharField(allow_null=True, help_text="null for a workflow never saved")
    base_version = serializers.IntegerField(allow_null=True, help_text="the version the draft was started from")
    latest_version = serializers.IntegerField(allow_null=True)
    placements = serializers.JSONField(help_text='step id -> {"x", "y"} on the graph')


class DraftOpenApi(ApiView):
    """The caller's draft of a saved workflow: made from its latest version (201), or the one they have (200)."""

    action = WRITE
    success_status = 201
    Output = DraftOut

    def post(self, request, name: str):
        workflow = workflow_named(request.user, name)
        had = Draft.objects.filter(user=request.user, workflow=workflow).exists()
        draft = editing.draft_open(request.user, workflow)
        return self.answer(data=drafts.draft_view(draft), status=200 if had else 201)


class DraftCreateApi(ApiView):
    """A draft of a new workflow from a text (at most 50 such drafts a person; the next is a 409)."""

    action = WRITE
    success_status = 201
    Output = DraftOut

    class Input(StrictSerializer):
        text = Text(help_text="the YAML to start from (it need not be valid yet), at most 1 MiB")

    def post(self, request):
        draft = editing.draft_new(request.user, self.read(request)["text"])
        return self.answer(data=drafts.draft_view(draft), status=201)


class DraftGetApi(ApiView):
    """A draft: its text and revision, its workflow and versions, and its text's problems and outline."""

    action = WRITE  # as the console's editor: drafts are only for those who may edit
    Output = DraftOut

    def get(self, request, draft_id: int):
        return self.answer(data=drafts.draft_view(draft_of(request.user, draft_id)))


class DraftDiscardApi(ApiView):
    """Forget the draft; the workflow stays at its latest version."""

    action = WRITE
    success_status = 204

    def delete(self, request, draft_id: int):
        editing.draft_discard(request.user, draft_of(request.user, draft_id))
        return self.answer(status=204)


class RevisionInput(StrictSerializer):
    revision = Whole(min_value=1, max_value=MAX_REVISION,
                     help_text="newer than the draft's: a write at an older revision is refused (409)")


class DraftTextApi(ApiView):
    """Keep a text as the draft's, at a newer revision; answers its problems and outline."""

    action = WRITE

    class Input(RevisionInput):
        text = Text(help_text="the whole YAML text, at most 1 MiB")

    class Output(TextStateOut):
        revision = serializers.IntegerField()

    def put(self, request, draft_id: int):
        draft = draft_of(request.user, draft_id)
        data = self.read(request)
        return self.answer(data=drafts.draft_type(request.user, draft, data["text"], data["revision"]))


class DraftPatchApi(ApiView):
    """Apply a typed patch, as the editor's graph and inspector do: `op` is one of step.add, step.remove,
    step.rename, step.duplicate, edge.add, edge.remove, field.set, field.unset, selection.paste, selection.remove,
    with its own fields (docs/editor.md). It applies to `text` when given (an editor ahead of the draft), else to
    the draft's text; only the lines it changes change. Answers the new text, the changed ranges, the revision."""

    action = WRITE

    class Input(RevisionInput):
        op = PatchOp(help_text='the patch, e.g. {"op": "step.rename", "id": "a", "to": "b"}')
        text = Text(required=False, help_text="the text to patch; the draft's when left out")

    class Output(TextStateOut):
        text = serializers.CharField()
        changes = serializers.ListField(child=serializers.DictField(), help_text="{from, to, insert} ranges")
        renamed = serializers.DictField(child=serializers.CharField(), help_text="ids a paste renamed")
        revision = serializers.IntegerField()

    def post(self, request, draft_id: int):
        draft = draft_of(request.user, draft_id)
        data = self.read(request)
        return self.answer(data=drafts.draft_patch(request.user, draft, data.get("text", draft.text),
                                                   data["revision"], data["op"]))


class DraftSaveApi(ApiView):
    """Save the draft's text as the next version of its workflow (or a new workflow). `base_version` is the
    version it was based on (null for a new workflow): when another was saved since, a 409 `stale` problem carries
    `merge` (base, theirs, mine, merged, conflicts) to resolve and save again."""

    action = WRITE
    success_status = 201

    class Input(StrictSerializer):
        message = Text(help_text="what changed, and why: up to 500 characters")
        base_version = Whole(allow_null=True, min_value=1)

    class Output(serializers.Serializer):
        version = VersionOut()
        created = serializers.BooleanField(help_text="false: the text was the latest version's already")

    def post(self, request, draft_id: int):
        draft = draft_of(request.user, draft_id)
        data = self.read(request)
        saved = editing.draft_save(request.user, draft, draft.text, data["message"], data["base_version"])
        return self.answer(saved, status=201 if saved.created else 200)


urlpatterns = [
    path("workflows/<str:name>/drafts", DraftOpenApi.as_view(), name="workflow-drafts"),
    path("drafts", DraftCreateApi.as_view(), name="drafts"),
    path("drafts/<int:draft_id>", by_method(get=DraftGetApi, delete=DraftDiscardApi), name="draft"),
    path("drafts/<int:draft_id>/text", DraftTextApi.as_view(), name="draft-text"),
    path("drafts/<int:draft_id>/patches", DraftPatchApi.as_view(), name="draft-patches"),
    path("drafts/<int:draft_id>/save", DraftSaveApi.as_view(), name="draft-save"),
]
