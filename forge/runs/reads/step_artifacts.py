"""A step's artifacts as its panel lists them: each kept file with its attempt, size and digest and a download
link, and each match that was refused (a link, a device, a path outside the run's directory, over a bound)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from forge.runs.reads.attempt_calls import positive_int
from forge.runs.artifacts import REFUSED, artifacts_of
from forge.runs.models import Run, RunEvent

UNITS = ("KiB", "MiB", "GiB", "TiB")


def size_text(size: int) -> str:
    """A size a person reads: "1 byte", "512 bytes", "1.5 KiB", "10.0 MiB" (powers of 1024, as the bounds are)."""
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    value = float(size)
    for unit in UNITS:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Kept:
    pk: int
    path: str
    size: int
    sha256: str
    attempt: int
    iteration: int
    url: str  # its download

    @property
    def size_text(self) -> str:
        return size_text(self.size)

    @property
    def short(self) -> str:
        return self.sha256[:12]


@dataclass(frozen=True)
class Refused:
    path: str
    reason: str
    attempt: int
    iteration: int


def step_artifacts(run: Run, step: str) -> tuple[list[Kept], list[Refused]]:
    kept = [Kept(a.pk, a.path, a.size, a.sha256, a.attempt, a.iteration,
                 reverse("console:artifact", args=[run.pk, a.pk])) for a in artifacts_of(run, step)]
    refused = []
    for data in (RunEvent.objects.filter(run=run, step=step, kind=REFUSED).order_by("id")
                 .values_list("data", flat=True)):
        if isinstance(data, dict):
            refused.append(Refused(str(data.get("path") or ""), str(data.get("reason") or ""),
                                   positive_int(data.get("attempt")), positive_int(data.get("iteration"))))
    return kept, refused
