"""What the run view's panes read: every step's attempts and waits (the Gantt and the status list), and the
run's log (shown under the graph, and downloaded). Seen by whoever may see the run, like the run's page."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from forge.runs.reads.attempts import run_times
from forge.console.filters import Filters
from forge.runs.reads.run_log import LEVELS, Query, run_log
from forge.console.views.pages import require_view
from forge.errors import BadRequest, problem_of
from forge.runs.compiled import run_workflow
from forge.runs.models import StepResult
from forge.runs.selectors import runs_for_user

PAGE, MOST = 500, 2000          # events read for the page, by default and at most
DOWNLOAD, DOWNLOAD_MOST = 20000, 20000
FORMATS = ("json", "text", "jsonl")
TEXT_LIMIT = 200


@login_required
def run_attempts(request, run_id: int):
    require_view(request)
    run = get_object_or_404(runs_for_user(request.user).select_related("version"), pk=run_id)
    return JsonResponse({**run_times(run), "now": timezone.now().isoformat()})


def _query(request, run) -> tuple[Query | None, str, list[str]]:
    given = Filters(request.GET)
    fmt = given.choice("format", FORMATS, default="json")
    level = given.choice("level", LEVELS, default="info")
    step = given.text("step", limit=StepResult._meta.get_field("step").max_length)
    if step and step not in run_workflow(run).by_id:
        given.problems.append(f"run {run.pk} has no step named {step!r}")
    text = given.text("q", limit=TEXT_LIMIT)
    after = given.number("after") or 0
    most, default = (MOST, PAGE) if fmt == "json" else (DOWNLOAD_MOST, DOWNLOAD)
    limit = given.number("limit") or default
    if limit > most:
        given.problems.append(f"limit must be at most {most} (events read in one page)")
    if given.problems:
        return None, fmt, given.problems
    return Query(level=level, step=step, text=text, after=after, limit=limit), fmt, []


@login_required
def run_log_view(request, run_id: int):
    """The log as JSON for the page, or as text / JSON lines to download (?format=text|jsonl). A page reads at
    most `limit` events; `next_after` continues it."""
    require_view(request)
    run = get_object_or_404(runs_for_user(request.user).select_related("version"), pk=run_id)
    query, fmt, problems = _query(request, run)
    if query is None:
        refusal = BadRequest("; ".join(problems))
        return JsonResponse({"error": refusal.message}, status=problem_of(refusal)[0])
    entries, next_after, last = run_log(run, query)
    if fmt == "json":
        return JsonResponse({"entries": [e.to_json() for e in entries], "next_after": next_after,
                             "last_event_id": last})
    if fmt == "text":
        body = "".join(e.to_text() + "\n" for e in entries)
        tail = f"# more: continue with ?format=text&after={next_after}\n" if next_after else ""
        response = HttpResponse(body + tail, content_type="text/plain; charset=utf-8")
    else:
        lines = [json.dumps(e.to_json(), ensure_ascii=False) for e in entries]
        if next_after:
            lines.append(json.dumps({"next_after": next_after}))
        response = HttpResponse("".join(line + "\n" for line in lines), content_type="application/x-ndjson")
    name = f"run-{run.pk}" + (f"-{query.step}" if query.step else "") + (".log" if fmt == "text" else ".jsonl")
    response["Content-Disposition"] = f'attachment; filename="{_safe(name)}"'
    return response


def _safe(name: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name)
