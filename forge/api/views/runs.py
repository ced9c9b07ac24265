"""The API's runs operations (docs/design/api.md, section 5): start, list, read a run with its steps or as its
report, a step's attempts, outputs and log, cancel, the restart plan and the restart bound to it. Each calls the
selector or service the console calls; who may not see runs is refused (403), an unknown run to those who may is a
404, as the run view's live stream answers (forge/runs/reads/stream.may_watch)."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from forge.accounts.roles import can
from forge.api.base import ApiView, StrictSerializer
from forge.api.fields import Whole, Words
from forge.api.problems import validation_problem
from forge.api.routes import by_method
from forge.api.serializers_runs import (
    LogEntryOut, RunDetailOut, RunOut, RunReportOut, StepAttemptsOut, StepOutputsOut,
)
from forge.runs.reads.attempts import step_times
from forge.runs.reads.report import shown_report
from forge.runs.reads.run_log import LEVELS, Query as LogQuery, run_log
from forge.runs.reads.run_view import run_view
from forge.runs.reads.secret_args import hider
from forge.runs.reads.step_panel import step_panel
from forge.errors import BadRequest, Invalid, NotFound
from forge.filters import MAX_ID, filtered
from forge.governance.validators import kept_json
from forge.runs import services
from forge.runs.filters import SORTS, RunFilter
from forge.runs.models import RUN_STATUSES, Run, StepResult
from forge.runs.restart_plan import restart_plan
from forge.runs.selectors import runs_for_user
from forge.workflows.models import Workflow
from forge.workflows.selectors import workflows_for_user

MAX_REASON = 2000  # as the console's cancel form (forge/console/views/actions.py)
MAX_STEP = StepResult._meta.get_field("step").max_length
LISTED = ("workflow", "version", "started_by")
API_SORTS = [name for name, column in SORTS.items() if "__" not in column]  # a cursor holds the row's own columns


def run_of(request, pk: int) -> Run:
    """The run `pk` if the person may see it; the view's `action` has refused those who may see none."""
    run = runs_for_user(request.user).select_related(*LISTED).filter(pk=pk).first()
    if run is None:
        raise NotFound(f"There is no run {pk}.", code="no_such_run")
    return run


def step_of(run: Run, step: str) -> StepResult:
    row = StepResult.objects.filter(run=run, step=step).first()
    if row is None:
        raise NotFound(f"Run {run.pk} has no step {step[:MAX_STEP]!r}.", code="no_such_step")
    return row


def fresh(run: Run) -> Run:
    """The run as its row now is (a service's on-commit work may have moved it on)."""
    return Run.objects.select_related(*LISTED).get(pk=run.pk)


def query(request, serializer: type[serializers.Serializer]) -> dict:
    """The query string read by `serializer`, or a 400 problem naming what was refused."""
    found = serializer(data=request.query_params)
    if not found.is_valid():
        raise validation_problem(found.errors)
    return found.validated_data


class RunStartApi(ApiView):
    """Start a run of a workflow's latest version (or the version named) with its arguments."""

    action = "run.start"
    Output = RunOut

    class Input(StrictSerializer):
        workflow = Words(max_length=Workflow._meta.get_field("name").max_length)
        version = Whole(min_value=1, max_value=MAX_ID, required=False,
                                help_text="a version number; the latest when left out")
        args = serializers.DictField(child=serializers.JSONField(), required=False, default=dict,
                                     help_text="the values of the workflow's `args`, as JSON values")

        def validate_args(self, value):
            """Values both databases keep (no NUL, unpaired surrogate or integer past 64 bits), before the engine's
            own rules judge them against the workflow's `args`."""
            try:
                kept_json(value)
            except ValidationError as exc:
                raise serializers.ValidationError(exc.messages) from None
            return value

    def post(self, request):
        data = self.read(request)
        workflow = workflows_for_user(request.user).filter(name=data["workflow"]).first()
        if workflow is None:
            raise NotFound(f"There is no workflow {data['workflow']!r}.", code="no_such_workflow")
        if "version" in data:
            version = workflow.versions.filter(number=data["version"]).first()
            if version is None:
                raise NotFound(f"{workflow.name} has no version {data['version']}: nothing was started.",
                               code="no_such_version")
        else:
            version = workflow.latest_version()
            if version is None:
                raise Invalid(f"{workflow.name} has no saved version.", code="no_version")
        run = services.run_start(user=request.user, version=version, args=data["args"])
        return self.answer(fresh(run), status=201)


class RunListApi(ApiView):
    """The runs the person may see, newest first, filtered as the console's runs list filters them."""

    action = "run.view"
    paged = True
    Output = RunOut

    @extend_schema(parameters=[
        OpenApiParameter("status", str, enum=[s for s, _ in RUN_STATUSES]),
        OpenApiParameter("workflow", str, description="the workflow's name"),
        OpenApiParameter("started_by", str, description="the username of who started it"),
        OpenApiParameter("since", str, description="created on or after: YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS] "
                                                   "in UTC unless it names its zone (Z, ±HH:MM)"),
        OpenApiParameter("until", str, description="created on or before (a day: its end), written as `since`"),
        OpenApiParameter("sort", str, enum=API_SORTS, description="the order; -id (the newest first) by default")])
    def get(self, request):
        runs = filtered(RunFilter, request.query_params, runs_for_user(request.user).select_related(*LISTED)
                        .defer("version__source", "pinned", "library"))  # large texts no row of the list shows
        sort = request.query_params.get("sort") or "-id"  # one of SORTS: the FilterSet refused any other
        if sort not in API_SORTS:
            raise BadRequest(f"sort must be one of {', '.join(API_SORTS)} here (the console's page also sorts by "
                             f"workflow)", code="bad_filter", errors={"sort": [f"One of {', '.join(API_SORTS)}."]})
        column = SORTS[sort]
        return self.page(runs, ordering=(column,) if column.endswith("id") else (column, "-id"))


class RunDetailApi(ApiView):
    """A run with its steps as the run view shows them: status, attempts, timings, error, why not running."""

    action = "run.view"
    Output = RunDetailOut

    def get(self, request, pk: int):
        run = run_of(request, pk)
        view = run_view(run)
        return self.answer(data=RunDetailOut(run, context={"view_of_run": view}).data)


class RunReportApi(ApiView):
    """The run's report as `python -m engine run --json` prints it (status `paused` when only a person can move it
    on), secrets hidden: what `forge status --json` and `forge run --wait --json` print in either mode."""

    action = "run.view"
    Output = RunReportOut

    def get(self, request, pk: int):
        return self.answer(data=shown_report(run_of(request, pk)))  # as built: the local mode prints the same


class StepAttemptsApi(ApiView):
    """A step's attempts and the waits between them (the step panel's table)."""

    action = "run.view"
    Output = StepAttemptsOut

    def get(self, request, pk: int, step: str):
        run = run_of(request, pk)
        step_of(run, step)
        return self.answer(data=StepAttemptsOut(step_times(run, step), context={"hide": hider(run.args)}).data)


class StepOutputsApi(ApiView):
    """What a step was given, returned and printed (its current attempt's output so far while it runs)."""

    action = "run.view"
    Output = StepOutputsOut

    def get(self, request, pk: int, step: str):
        run = run_of(request, pk)
        panel = step_panel(run, step)
        if panel is None:
            step_of(run, step)  # raises its NotFound
        return self.answer(panel)


class StepLogApi(ApiView):
    """A step's log: its events and what its attempts printed, in the run's order, from `after` on."""

    action = "run.view"

    class Query(serializers.Serializer):
        level = serializers.ChoiceField(choices=LEVELS, default="info", help_text="the least level shown")
        text = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        after = serializers.IntegerField(min_value=0, max_value=MAX_ID, default=0,
                                         help_text="the run event id to continue after (the answer's `next`)")
        limit = serializers.IntegerField(min_value=1, max_value=500, default=500, help_text="events read")

    class Output(serializers.Serializer):
        entries = LogEntryOut(many=True)
        next = serializers.IntegerField(allow_null=True, help_text="`after` for the next part; null at the end")
        last_event_id = serializers.IntegerField()

    @extend_schema(parameters=[Query])
    def get(self, request, pk: int, step: str):
        asked = query(request, self.Query)
        run = run_of(request, pk)
        step_of(run, step)
        entries, more, last = run_log(run, LogQuery(step=step, **asked))
        return self.answer({"entries": [entry.to_json() for entry in entries], "next": more, "last_event_id": last})


class RunCancelApi(ApiView):
    """Ask a run to stop: its running steps are cancelled and it ends as cancelled."""

    action = "run.cancel"
    Output = RunOut

    class Input(StrictSerializer):
        reason = Words(max_length=MAX_REASON, required=False, default="", allow_blank=True)

    def post(self, request, pk: int):
        data = self.read(request)
        run = services.run_cancel(user=request.user, run=run_of(request, pk), reason=data["reason"])
        return self.answer(fresh(run), status=202)


class RestartPlanApi(ApiView):
    """What restarting the run from `step` will do, and the fingerprint a restart must send back."""

    action = "run.view"

    class Query(serializers.Serializer):
        step = serializers.CharField(max_length=MAX_STEP)

    class Output(serializers.Serializer):
        run = serializers.IntegerField()
        step = serializers.CharField()
        rerun = serializers.ListField(child=serializers.CharField(), help_text="the steps run again, in order")
        carried = serializers.ListField(child=serializers.DictField(), help_text="{step, outputs} kept as they are")
        latest_version = serializers.IntegerField(allow_null=True, help_text="the workflow's latest version when it "
                                                                             "is not the one the run pinned")
        diff = serializers.CharField(help_text="the pinned version to the latest, unified")
        fingerprint = serializers.CharField(help_text="what the restart sends as `plan`")
        may_restart = serializers.BooleanField(help_text="the person may restart it, and the run has ended")

    @extend_schema(parameters=[Query])
    def get(self, request, pk: int):
        step = query(request, self.Query)["step"]
        run = run_of(request, pk)
        try:
            plan = restart_plan(run, step)
        except ValueError:
            raise NotFound(f"Run {run.pk} has no step {step!r}.", code="no_such_step") from None
        hide = hider(run.args)
        return self.answer({
            "run": run.pk, "step": plan.step, "rerun": plan.rerun,
            "carried": [{"step": s, "outputs": hide(json.loads(text))} for s, text in plan.carried],
            "latest_version": plan.latest_number, "diff": plan.diff, "fingerprint": plan.fingerprint,
            "may_restart": run.finished and can(request.user, "run.restart")})


class RunRestartApi(ApiView):
    """A new run of the same version from `step`, if the plan is still the one whose fingerprint is sent."""

    action = "run.restart"
    Output = RunOut

    class Input(StrictSerializer):
        step = Words(max_length=MAX_STEP)
        plan = Words(max_length=64, help_text="the restart plan's fingerprint")

    def post(self, request, pk: int):
        data = self.read(request)
        new = services.run_restart(user=request.user, run=run_of(request, pk), step=data["step"],
                                   plan=data["plan"])
        return self.answer(fresh(new), status=201)


urlpatterns = [
    path("runs", by_method(get=RunListApi, post=RunStartApi), name="runs"),
    path("runs/<int:pk>", RunDetailApi.as_view(), name="run-detail"),
    path("runs/<int:pk>/report", RunReportApi.as_view(), name="run-report"),
    path("runs/<int:pk>/steps/<str:step>/attempts", StepAttemptsApi.as_view(), name="run-step-attempts"),
    path("runs/<int:pk>/steps/<str:step>/outputs", StepOutputsApi.as_view(), name="run-step-outputs"),
    path("runs/<int:pk>/steps/<str:step>/log", StepLogApi.as_view(), name="run-step-log"),
    path("runs/<int:pk>/cancel", RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<int:pk>/restart-plan", RestartPlanApi.as_view(), name="run-restart-plan"),
    path("runs/<int:pk>/restart", RunRestartApi.as_view(), name="run-restart"),
]
