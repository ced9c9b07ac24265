"""The API's workflows operations (docs/design/api.md, section 5): list, read, versions and their YAML, create a
version from YAML, validate, diff. Each calls what the console's workflow and versions pages call."""

from __future__ import annotations

from functools import partial

from django.db.models import Count, Max
from django.http import HttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer

from forge.api.base import ApiView, StrictSerializer
from forge.api.problems import validation_problem
from forge.api.routes import by_method
from forge.api.serializers_workflows import MAX_NUMBER, ProblemOut, Text, VersionOut, YamlText
from forge.errors import NotFound
from forge.filters import filtered
from forge.runs.selectors import runs_for_user
from forge.schedules.models import Schedule
from forge.workflows import drafts, editing
from forge.workflows.filters import WorkflowFilter
from forge.workflows.models import Workflow, WorkflowVersion
from forge.workflows.selectors import workflows_for_user
from forge.workflows.services import workflow_validate, workflow_version_put

READ, WRITE = "workflow.view", "workflow.edit"  # as the console's workflow pages and its editor ask


def workflow_named(user, name: str) -> Workflow:
    """The workflow `name` when `user` may see it; a 404 problem otherwise."""
    workflow = workflows_for_user(user).filter(name=name[:128]).first()
    if workflow is None:
        raise NotFound(f"No workflow is named {name[:128]!r}.", code="no_such_workflow")
    return workflow


def version_of(workflow: Workflow, number: int) -> WorkflowVersion:
    version = (workflow.versions.select_related("workflow", "created_by").filter(number=number).first()
               if 0 < number <= MAX_NUMBER else None)
    if version is None:
        raise NotFound(f"{workflow.name!r} has no version {number}.", code="no_such_version")
    return version


class WorkflowOut(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    latest_version = serializers.IntegerField(allow_null=True, help_text="the newest version's number")
    version_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class WorkflowListApi(ApiView):
    """The workflows, by name: `?name=` that one, `?name_contains=` those whose name holds it (any case)."""

    action = READ
    paged = True
    ordering = ("name",)
    Output = WorkflowOut
    filterset_class = WorkflowFilter

    def get(self, request):
        workflows = filtered(WorkflowFilter, request.query_params, workflows_for_user(request.user))
        return self.page(workflows.annotate(latest_version=Max("versions__number"),
                                            version_count=Count("versions")))


class WorkflowGetApi(ApiView):
    """A workflow: its description, latest version and counts."""

    action = READ

    class Output(serializers.Serializer):
        name = serializers.CharField()
        description = serializers.CharField()
        created_at = serializers.DateTimeField()
        created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
        latest = VersionOut(allow_null=True, help_text="the newest version, null before the first")
        counts = serializers.DictField(child=serializers.IntegerField(),
                                       help_text="versions, runs (that the caller may see) and schedules")

    def get(self, request, name: str):
        workflow = workflow_named(request.user, name)
        latest = workflow.versions.select_related("workflow", "created_by").order_by("-number").first()
        counts = {"versions": workflow.versions.count(),
                  "runs": runs_for_user(request.user).filter(workflow=workflow).count(),
                  "schedules": Schedule.objects.filter(workflow=workflow).count()}
        return self.answer(data=self.Output({
            "name": workflow.name, "description": workflow.description, "created_at": workflow.created_at,
            "created_by": workflow.created_by, "latest": latest, "counts": counts}).data)


class WorkflowVersionListApi(ApiView):
    """A workflow's versions, newest first (their metadata, not their texts)."""

    action = READ
    paged = True
    ordering = ("-number",)
    Output = VersionOut

    def get(self, request, name: str):
        workflow = workflow_named(request.user, name)
        return self.page(workflow.versions.select_related("workflow", "created_by").defer("source"))


class WorkflowVersionGetApi(ApiView):
    """One version's metadata: number, content hash, message, author, when."""

    action = READ
    Output = VersionOut

    def get(self, request, name: str, number: int):
        return self.answer(version_of(workflow_named(request.user, name), number))


class YamlRenderer(BaseRenderer):
    """text/yaml: a version's text as saved. A refusal is still its problem+json (rendered as JSON)."""

    media_type = "text/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, str):
            return data.encode("utf-8")
        return JSONRenderer().render(data)


class WorkflowVersionYamlApi(ApiView):
    """The exact text of a version, byte for byte (a BOM and CRLF line endings stay)."""

    action = READ
    renderer_classes = [YamlRenderer]

    @extend_schema(responses={(200, "text/yaml"): OpenApiResponse(OpenApiTypes.STR, description="the text")})
    def get(self, request, name: str, number: int):
        version = version_of(workflow_named(request.user, name), number)
        return HttpResponse(version.source.encode("utf-8"), content_type="text/yaml; charset=utf-8")


class WorkflowCreateApi(ApiView):
    """Save YAML as a version: a new workflow, or the next version of the workflow it names (the same text as an
    existing version answers that version, 200). An invalid text is a 422 problem listing the validator's
    `problems`."""

    action = WRITE
    success_status = 201

    class Input(StrictSerializer):
        yaml = YamlText()
        message = Text(required=False, default="", help_text="what changed, and why: up to 500 characters")

    class Output(VersionOut):
        created = serializers.BooleanField(help_text="false: the text was a version already, nothing was added")

    def post(self, request):
        data = self.read(request)
        source = editing.storable(data["yaml"], "the text")
        message = editing.message_of(data["message"])
        version, created = workflow_version_put(user=request.user, source=source, message=message)  # 422: its problems
        version.created = created
        return self.answer(version, status=201 if version.created else 200)


class WorkflowValidateApi(ApiView):
    """What `forge validate` says of a YAML text, with this installation's step library and agents; nothing is
    saved."""

    action = READ

    class Input(StrictSerializer):
        yaml = YamlText()

    class Output(serializers.Serializer):
        valid = serializers.BooleanField()
        problems = ProblemOut(many=True)
        warnings = ProblemOut(many=True)

    def post(self, request):
        data = self.read(request)
        return self.answer(data=workflow_validate(source=data["yaml"]).to_json())


class WorkflowDiffApi(ApiView):
    """What changed from version `from` to version `to`: the engine's anchored unified diff and, step by step,
    the steps added, removed, renamed, moved and each changed field (as the versions page shows)."""

    action = READ

    Query = type("DiffQuery", (StrictSerializer,), {  # `from` is a keyword: its field is declared by name
        "from": serializers.IntegerField(min_value=1, max_value=MAX_NUMBER),
        "to": serializers.IntegerField(min_value=1, max_value=MAX_NUMBER)})

    class Output(serializers.Serializer):
        diff = serializers.CharField(help_text="unified diff, empty when the texts are the same")
        summary = serializers.JSONField(help_text="added, removed, renamed, moved and changed steps")

    @extend_schema(parameters=[OpenApiParameter("from", int, required=True),
                               OpenApiParameter("to", int, required=True)])
    def get(self, request, name: str):
        query = self.Query(data=request.query_params.dict())
        if not query.is_valid():
            raise validation_problem(query.errors)
        workflow = workflow_named(request.user, name)
        numbers = query.validated_data
        return self.answer(data=drafts.versions_diff(workflow, numbers["from"], numbers["to"]))


@extend_schema(exclude=True)  # workflow_get at the address of a workflow named `validate`: documented once
class WorkflowNamedValidateApi(WorkflowGetApi):
    pass


urlpatterns = [
    path("workflows", by_method(get=WorkflowListApi, post=WorkflowCreateApi), name="workflows"),
    # A workflow may be named `validate`: GET reads it, POST validates.
    path("workflows/validate", by_method(get=partial(WorkflowNamedValidateApi.as_view(), name="validate"),
                                         post=WorkflowValidateApi), name="workflow-validate"),
    path("workflows/<str:name>", WorkflowGetApi.as_view(), name="workflow"),
    path("workflows/<str:name>/versions", WorkflowVersionListApi.as_view(), name="workflow-versions"),
    path("workflows/<str:name>/versions/<int:number>", WorkflowVersionGetApi.as_view(), name="workflow-version"),
    path("workflows/<str:name>/versions/<int:number>/yaml", WorkflowVersionYamlApi.as_view(),
         name="workflow-version-yaml"),
    path("workflows/<str:name>/diff", WorkflowDiffApi.as_view(), name="workflow-diff"),
]
