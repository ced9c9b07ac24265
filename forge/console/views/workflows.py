"""Workflows: the list, and a workflow's page with its versions, runs, schedules and the Run form."""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max, Q
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from engine.edit import unified_diff
from engine.problems import WorkflowInvalid
from forge.accounts.roles import can
from forge.console.run_form import (RunFormRefused, arg_fields, posted_args, run_again, run_again_values,
                                    version_to_start)
from forge.console.views.actions import sentence
from forge.console.views.pages import require_view
from forge.console.workflow_graph import workflow_graph
from forge.errors import BadRequest, problem_of
from forge.runs import services
from forge.runs.compiled import new_run_workflow
from forge.runs.models import Run
from forge.runs.selectors import runs_for_user
from forge.schedules import services as schedules
from forge.schedules.models import Schedule
from forge.workflows import layouts
from forge.workflows.models import Workflow, WorkflowVersion


@login_required
def workflow_list(request):
    require_view(request)
    week_ago = timezone.now() - timedelta(days=7)
    workflows = Workflow.objects.annotate(latest=Max("versions__number"),
                                          runs_this_week=Count("runs", filter=Q(runs__created_at__gte=week_ago)),
                                          last_run_id=Max("runs__id")).order_by("name")
    last = dict(Run.objects.filter(pk__in=[w.last_run_id for w in workflows if w.last_run_id])
                .values_list("pk", "status"))
    rows = [(w, last.get(w.last_run_id)) for w in workflows]
    return render(request, "console/workflows.html", {"nav": "workflows", "rows": rows,
                                                      "may_edit": can(request.user, "workflow.edit")})


LATEST_SHOWN = 5  # versions on the workflow's page, each with its diff; the whole history is the versions page's


def _versions(workflow: Workflow) -> list[tuple]:
    """The latest few versions, newest first, each with its diff to the one before (the first: no diff)."""
    versions = list(workflow.versions.select_related("created_by").order_by("-number")[:LATEST_SHOWN + 1])
    return [(version, unified_diff(before.source, version.source, f"v{before.number}", f"v{version.number}")
             if before else "") for version, before in zip(versions, versions[1:] + [None])][:LATEST_SHOWN]


@login_required
def workflow_detail(request, name: str):
    require_view(request)
    workflow = get_object_or_404(Workflow, name=name)
    version = workflow.latest_version()
    if request.method == "POST":
        return _start(request, workflow, version)
    status = 200
    if "run_again" in request.GET and version and can(request.user, "run.start"):
        if (filled := _run_again(request, workflow, version)) is not None:
            return filled
        status = 400  # refused, in a message: the page goes on unfilled
    try:
        fields = arg_fields(version) if version else []
    except WorkflowInvalid as exc:  # today's step library no longer has what the version names
        return _page(request, workflow, version, [], cannot_run=f"Version {version.number} cannot run with today's "
                     f"step library: {exc}. Its runs keep the library they started with.", status=status)
    return _page(request, workflow, version, fields, status=status)


def _run_again(request, workflow, latest):
    """The Run form of a run's own version, filled with its arguments, to start as is or changed; None when it
    cannot be (why is in a message)."""
    try:
        again = run_again(request.user, workflow, request.GET["run_again"])
    except RunFormRefused as exc:
        messages.error(request, str(exc))
        return None
    values, withheld = run_again_values(again)
    try:
        fields = arg_fields(again.version, values)
    except WorkflowInvalid as exc:
        messages.error(request, f"Run {again.pk}'s version v{again.version.number} cannot run with today's step "
                                f"library: {exc}. The form is not filled from it.")
        return None
    return _page(request, workflow, latest, fields, form_version=again.version, again=again, withheld=withheld)


def _page(request, workflow, version, fields, status: int = 200, *, form_version=None, again=None, withheld=(),
          cannot_run: str = ""):
    runs = runs_for_user(request.user).filter(workflow=workflow).select_related("version", "started_by")
    return render(request, "console/workflow.html", {
        "nav": "workflows", "workflow": workflow, "version": version, "fields": fields,
        "graph": workflow_graph(version) if version and not cannot_run else None, "cannot_run": cannot_run,
        "versions": _versions(workflow), "version_count": workflow.versions.count(), "runs": runs.order_by("-id")[:20],
        "schedules": Schedule.objects.filter(workflow=workflow).order_by("pk"),
        "may_run": can(request.user, "run.start"), "may_schedule": can(request.user, "schedule.manage"),
        "may_edit": can(request.user, "workflow.edit"),
        "form_version": form_version or version, "again": again, "withheld": withheld,
        "warnings": _warnings(version) if version and not cannot_run else [],
    }, status=status)


def _warnings(version) -> list:
    """What validation warns about in the version (spec 15's unknown_name, ...), from its cached compilation."""
    try:
        return new_run_workflow(version)[0].warnings
    except WorkflowInvalid:
        return []  # the page says it cannot run, and why


def _start(request, workflow, latest):
    try:
        version = version_to_start(workflow, request.POST)
    except RunFormRefused as exc:
        messages.error(request, str(exc))
        return _page(request, workflow, latest, arg_fields(latest) if latest else [], status=400)
    if version is None:
        messages.error(request, "This workflow has no saved version.")
        return redirect("console:workflow", workflow.name)
    try:
        args = posted_args(version, request.POST)
    except WorkflowInvalid as exc:
        messages.error(request, f"{version} cannot run with today's step library: {exc}. Nothing was started.")
        return redirect("console:workflow", workflow.name)
    try:
        run = services.run_start(user=request.user, version=version, args=args, args_from_text=True)
    except (services.ServiceError, PermissionDenied) as exc:
        messages.error(request, sentence(exc))
        return _page(request, workflow, latest, arg_fields(version, request.POST), status=400, form_version=version)
    messages.success(request, f"Run {run.pk} of {version} started.")
    return redirect("console:run", run.pk)


@login_required
@require_POST
def schedule_toggle(request, schedule_id: int):
    require_view(request)
    schedule = get_object_or_404(Schedule.objects.select_related("workflow"), pk=schedule_id)
    verb = schedules.schedule_pause if schedule.enabled else schedules.schedule_resume
    try:
        verb(user=request.user, schedule=schedule)
        messages.success(request, f"Schedule {schedule.pk} {'paused' if schedule.enabled else 'resumed'}.")
    except (schedules.ScheduleRejected, PermissionDenied) as exc:
        messages.error(request, sentence(exc))
    return redirect("console:workflow", schedule.workflow.name)


@login_required
@require_POST
def layout_keep(request, content_hash: str):
    """The first browser to lay out a version's graph keeps its positions here for everyone after it."""
    require_view(request)
    if not WorkflowVersion.objects.filter(content_hash=content_hash).exists():
        raise Http404("no workflow version has this content hash")
    try:
        positions = json.loads(request.body)
    except (ValueError, RecursionError):
        refusal = BadRequest("the body is not JSON")
        return JsonResponse({"error": refusal.message}, status=problem_of(refusal)[0])
    try:
        kept = layouts.layout_save(user=request.user, content_hash=content_hash, positions=positions)
    except layouts.LayoutRejected as exc:
        return JsonResponse({"error": exc.message}, status=problem_of(exc)[0])
    return JsonResponse({"kept": kept})
