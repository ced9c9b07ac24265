"""A shell step's output while it runs: the worker's watcher keeps the attempt's last bytes, and the step panel
shows them as output so far (with stderr), then the step's own stdout once it ended."""

import pytest
from django.urls import reverse

from forge.runs.models import StepOutput, StepResult
from forge.runtime.output import KEPT_CHARS, watcher

pytestmark = pytest.mark.django_db


def test_the_panel_of_a_running_step_shows_what_it_printed_so_far(client, run, operator):
    StepResult.objects.filter(run=run, step="ship").update(status="running", attempt=1)
    watch = watcher(run.pk, "ship", 1)
    watch("loading rows\n", "")
    watch("loading rows\n40% done\n", "slow disk\n")  # the same row, rewritten
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[run.pk, "ship"])).content.decode()
    assert 'data-running="true"' in html and "stdout so far" in html
    assert "40% done" in html and "slow disk" in html
    assert StepOutput.objects.count() == 1


def test_only_the_last_characters_of_each_stream_are_kept(run):
    watcher(run.pk, "ship", 1)("x" * KEPT_CHARS + "tail", "e" * (KEPT_CHARS + 10))
    kept = StepOutput.objects.get()
    assert kept.stdout.endswith("tail") and len(kept.stdout) == len(kept.stderr) == KEPT_CHARS


def test_an_ended_step_shows_its_own_stdout_and_keeps_its_stderr(client, run, operator):
    StepResult.objects.filter(run=run, step="ship").update(status="failed", attempt=1, stdout="final words\n")
    watcher(run.pk, "ship", 1)("partial\n", "boom\n")
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[run.pk, "ship"])).content.decode()
    assert 'data-running="false"' in html and "final words" in html and "partial" not in html and "boom" in html
