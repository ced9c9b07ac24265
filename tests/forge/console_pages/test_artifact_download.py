"""Downloading a kept artifact (spec 15): whoever may see the run gets the exact bytes as an attachment that is
never sniffed or shown inline; anyone else, a wrong id, another run's artifact or a stored name that is not the
runtime's gets nothing, and never a 500."""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse

from forge.runs import services
from forge.runs.models import Artifact

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

WRITES = """
name: writes
steps:
  - id: build
    agent: shell
    command: |
      mkdir -p 'out dir'
      printf 'the report' > 'out dir/r\u00e9sum\u00e9 "final".txt'
      printf 'second' > plain.txt
    artifacts: ["out dir/*.txt", "plain.txt"]
"""


@pytest.fixture
def kept(operator, save_workflow, settings, tmp_path):
    settings.FORGE_WORKDIR = tmp_path / "work"
    settings.FORGE_ARTIFACTS_DIR = tmp_path / "artifacts"
    run = services.run_start(user=operator, version=save_workflow(WRITES))
    run.refresh_from_db()
    assert run.status == "completed"
    return run, {a.path: a for a in Artifact.objects.filter(run=run)}


def url(run_id, artifact_id) -> str:
    return reverse("console:artifact", args=[run_id, artifact_id])


def body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.parametrize("viewer", ["operator", "approver", "admin_user"])
def test_whoever_may_see_the_run_gets_the_exact_bytes_as_an_attachment(client, kept, viewer, request):
    run, files = kept
    client.force_login(request.getfixturevalue(viewer))
    artifact = files['out dir/résumé "final".txt']

    response = client.get(url(run.pk, artifact.pk))

    assert response.status_code == 200
    data = body(response)
    assert data == b"the report" and hashlib.sha256(data).hexdigest() == artifact.sha256
    assert response["Content-Type"] == "application/octet-stream"
    assert response["X-Content-Type-Options"] == "nosniff"
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert f'filename="run-{run.pk}-r_sum___final_.txt"' in disposition
    assert "\n" not in disposition and "/" not in disposition


def test_someone_in_no_group_is_refused_and_gets_no_bytes(client, kept, outsider):
    run, files = kept
    client.force_login(outsider)
    response = client.get(url(run.pk, files["plain.txt"].pk))
    assert response.status_code == 403
    assert b"second" not in response.content


def test_someone_not_logged_in_is_sent_to_log_in(client, kept):
    run, files = kept
    response = client.get(url(run.pk, files["plain.txt"].pk))
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


def test_a_wrong_id_or_another_runs_artifact_is_404(client, kept, operator, save_workflow):
    run, files = kept
    other = services.run_start(user=operator, version=save_workflow(WRITES.replace("name: writes",
                                                                                  "name: writes_again")))
    theirs = Artifact.objects.filter(run=other).first()
    client.force_login(operator)
    for run_id, artifact_id in [(run.pk, 999999), (999999, files["plain.txt"].pk), (run.pk, theirs.pk),
                                (run.pk, 2**63 - 1), (2**63 - 1, 1), (run.pk, 2**64)]:
        assert client.get(url(run_id, artifact_id)).status_code == 404, (run_id, artifact_id)


def test_a_stored_name_that_is_not_the_runtimes_is_never_opened(client, kept, operator):
    run, files = kept
    client.force_login(operator)
    artifact = files["plain.txt"]
    for stored in ["../../../../etc/passwd", "/etc/passwd", f"run-{run.pk}/../../../etc/passwd", ""]:
        Artifact.objects.filter(pk=artifact.pk).update(stored=stored)
        response = client.get(url(run.pk, artifact.pk))
        assert response.status_code == 404, stored
        assert b"root:" not in response.content


def test_a_missing_stored_file_is_404(client, kept, operator, settings):
    run, files = kept
    artifact = files["plain.txt"]
    (settings.FORGE_ARTIFACTS_DIR / artifact.stored).unlink()
    client.force_login(operator)
    assert client.get(url(run.pk, artifact.pk)).status_code == 404


def test_a_post_is_not_a_download(client, kept, operator):
    run, files = kept
    client.force_login(operator)
    assert client.post(url(run.pk, files["plain.txt"].pk)).status_code == 405
