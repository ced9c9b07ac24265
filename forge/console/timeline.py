"""The run's timeline (a Gantt chart): one bar per step that started, placed on the run's own clock."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from forge.runs.models import Run, StepResult


@dataclass(frozen=True)
class Bar:
    step: str
    status: str
    left: float  # percent of the run's span
    width: float
    seconds: float

    @property
    def title(self) -> str:
        return f"{self.step}: {self.status}, {self.seconds:.3f} s"


def timeline(run: Run) -> tuple[list[Bar], float]:
    """The bars in start order, and the span they share in seconds."""
    rows = list(StepResult.objects.filter(run=run, started_at__isnull=False).order_by("started_at", "position"))
    if not rows:
        return [], 0.0
    start = min(row.started_at for row in rows)
    now = timezone.now()
    end = max((row.finished_at or now) for row in rows)
    span = max((end - start).total_seconds(), 0.001)
    bars = []
    for row in rows:
        finished = row.finished_at or now
        left = (row.started_at - start).total_seconds() / span * 100
        seconds = (finished - row.started_at).total_seconds()
        bars.append(Bar(row.step, row.status, round(left, 2), round(max(seconds / span * 100, 0.4), 2), seconds))
    return bars, span
