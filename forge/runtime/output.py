"""A shell step's output while it runs: the executor's watcher writes the last bytes of each stream to the
attempt's StepOutput row, which the step panel reads. Not run state: no round, no event."""

from __future__ import annotations

from typing import Callable

from django.utils import timezone

from forge.runs.models import StepOutput

KEPT_CHARS = 65536  # of each stream, the last ones: the panel shows a tail; the whole stdout ends up on the step


def watcher(run_id: int, step: str, attempt: int) -> Callable[[str, str], None]:
    def watch(stdout: str, stderr: str) -> None:
        StepOutput.objects.update_or_create(run_id=run_id, step=step, attempt=attempt, defaults={
            "stdout": stdout[-KEPT_CHARS:], "stderr": stderr[-KEPT_CHARS:], "updated_at": timezone.now()})
    return watch
