"""Downloading a file a step's artifacts kept (spec 15): for whoever may see its run, checked as the run's page
checks it (403 for someone in no group of the console, 404 for a run or artifact they cannot see or that is not
there: the same answer, so an id tells nothing).

The file is found by its row (the run and the artifact's id in the URL) and opened by the stored name the
runtime wrote (forge.runs.artifacts.open_stored), never by anything the request says. It is always sent as an
attachment of type application/octet-stream, never sniffed or shown inline: a step's file is not trusted.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from forge.console.views.pages import require_view
from forge.runs.artifacts import open_stored
from forge.runs.models import Artifact
from forge.runs.selectors import runs_for_user

NAME_CHARS = 120  # of the file's own name, in the download's file name


def download_name(run_id: int, path: str) -> str:
    """The download's file name: the kept file's own name (its last segment) in plain ASCII, after the run's id so
    that files of different runs stay apart (`run-12-report.pdf`)."""
    name = path.rsplit("/", 1)[-1]
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name).lstrip(".")
    return f"run-{run_id}-{safe[-NAME_CHARS:] or 'artifact'}"


@login_required
@require_GET
def artifact_download(request, run_id: int, artifact_id: int):
    require_view(request)  # someone in no group of the console: 403, as on every page
    run = get_object_or_404(runs_for_user(request.user), pk=run_id)
    artifact = get_object_or_404(Artifact, run=run, pk=artifact_id)
    stored = open_stored(artifact)
    if stored is None:
        raise Http404(f"the file of artifact {artifact.pk} is no longer kept")
    response = FileResponse(stored, as_attachment=True, filename=download_name(run.pk, artifact.path),
                            content_type="application/octet-stream")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response
