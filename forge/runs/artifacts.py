"""A step's artifacts kept with its attempt (spec 15): the files its `artifacts` globs match in the run's directory
when the attempt ends, copied under FORGE_ARTIFACTS_DIR, one Artifact row each.

The worker that ran the attempt keeps them (`keep`) after the attempt and before its result is recorded:

1. engine.artifacts.collect walks the run's directory without following anything the step left (links, devices,
   paths outside it are refused) and copies each match, at most FORGE_ARTIFACT_MAX_BYTES, into a fresh directory
   under FORGE_ARTIFACTS_DIR, hashing exactly the bytes it copies;
2. in one transaction, under the run's lock, while the attempt is still this worker's (its fence): what fits in
   the run's FORGE_ARTIFACT_RUN_MAX_BYTES is moved to its stored name, `run-<id>/<sha256>` (content-addressed,
   so writing it again is harmless), and the attempt's rows are replaced by this set; each refusal is a RunEvent
   `artifact_refused`, up to RUN_REFUSALS a run, past which a collection's refusals are one counted event.

So a worker that dies at any point and the attempt that runs again leave one row per file (the constraint
`artifact_once`), those of the run that finished; a worker whose attempt was taken over, cancelled or timed out
(a new fence) keeps nothing. A stored file is only ever opened by its stored name (`open_stored`).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from engine.artifacts import Kept, Refused, collect
from forge.runs.models import Artifact, Run, RunEvent, StepResult
from forge.runtime import store

log = logging.getLogger(__name__)

REFUSED = "artifact_refused"  # the RunEvent kind of a match not kept
_STORED = re.compile(r"run-[0-9]{1,19}/[0-9a-f]{64}")
PATH_CHARS = Artifact._meta.get_field("path").max_length
_INCOMING = ".incoming"  # where a collection copies to, on the stored files' file system
# Files kept per run in all: empty files cost no bytes, yet each is a row, and a collection's 1,000
# (engine.artifacts.MAX_KEPT) times a step's attempts and loop iterations was millions.
RUN_FILES = 10_000
# Refusals said per run: a collection lists up to 100 (engine.artifacts.MAX_REFUSED), times a step's attempts and
# loop iterations; past this bound each collection's are one counted event.
RUN_REFUSALS = 1_000


def stored_name(run_id: int, sha256: str) -> str:
    return f"run-{int(run_id)}/{sha256}"


def open_stored(artifact: Artifact):
    """The stored file of `artifact`, opened for reading (binary), or None when it is missing or its stored name is
    not one `keep` writes (a row edited by hand): no other path is ever opened."""
    if not _STORED.fullmatch(artifact.stored or ""):
        return None
    try:
        return open(Path(settings.FORGE_ARTIFACTS_DIR) / artifact.stored, "rb")
    except OSError:
        return None


def artifacts_of(run: Run, step: str):
    """The files a step's attempts kept, by attempt, iteration and path (the console's step panel lists them)."""
    return Artifact.objects.filter(run=run, step=step).order_by("attempt", "iteration", "path")


def listing(run: Run) -> dict[str, dict[str, list]]:
    """What the run's steps kept and had refused, as the local runner's report lists them (engine.artifacts.Listing):
    step -> {"kept": [{path, size, sha256, attempt}], "refused": [{path, reason, attempt}]}."""
    steps: dict[str, dict[str, list]] = {}
    for a in Artifact.objects.filter(run=run).order_by("step", "attempt", "iteration", "path"):
        steps.setdefault(a.step, {"kept": [], "refused": []})["kept"].append(
            {"path": a.path, "size": a.size, "sha256": a.sha256, "attempt": a.attempt})
    for step, data in RunEvent.objects.filter(run=run, kind=REFUSED).order_by("id").values_list("step", "data"):
        if isinstance(data, dict):
            steps.setdefault(step, {"kept": [], "refused": []})["refused"].append(
                {"path": data.get("path"), "reason": data.get("reason"), "attempt": data.get("attempt")})
    return steps


def _used(run_id: int, step: str, attempt: int, iteration: int) -> int:
    """The bytes the run keeps already, this attempt's own (which it replaces) left out."""
    others = Artifact.objects.filter(run_id=run_id).exclude(step=step, attempt=attempt, iteration=iteration)
    return others.aggregate(total=Sum("size"))["total"] or 0


def keep(*, run_id: int, step: str, attempt: int, iteration: int, fence: int, patterns: list[str],
         workdir: str) -> list[Artifact]:
    """Keep what the attempt's `patterns` match in `workdir` (the run's directory); the rows kept. Never raises for
    a file: what cannot be kept is an `artifact_refused` event."""
    if not patterns or not os.path.isdir(workdir):
        return []
    if os.path.islink(workdir):  # a step without its sandbox swapped its run's directory for a link: not followed
        _record(run_id, step, attempt, iteration, fence, [], [Refused(".", "the run's directory is a symbolic link, "
                                                                           "never followed")])
        return []
    root = Path(settings.FORGE_ARTIFACTS_DIR)
    try:
        (root / _INCOMING).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root / _INCOMING, prefix=f"run-{run_id}-") as incoming:
            left = settings.FORGE_ARTIFACT_RUN_MAX_BYTES - _used(run_id, step, attempt, iteration)
            collected = collect(workdir, patterns, max_file_bytes=settings.FORGE_ARTIFACT_MAX_BYTES,
                                budget_bytes=max(0, left), into=Path(incoming))
            return _record(run_id, step, attempt, iteration, fence, collected.kept, collected.refused)
    except (OSError, ValueError) as error:  # the store failed (a full disk, say): the step's result still counts
        log.warning("artifacts of run %s step %s attempt %s not kept: %s", run_id, step, attempt, error)
        reason = f"the artifacts could not be stored ({getattr(error, 'strerror', None) or type(error).__name__})"
        _record(run_id, step, attempt, iteration, fence, [], [Refused(", ".join(patterns)[:200], reason)])
        return []


def _record(run_id: int, step: str, attempt: int, iteration: int, fence: int, kept: list[Kept],
            refused: list[Refused]) -> list[Artifact]:
    """Store and write what fits, while the attempt is still this worker's."""
    root = Path(settings.FORGE_ARTIFACTS_DIR)
    now = timezone.now()
    with transaction.atomic():
        store.lock_run(run_id)
        row = StepResult.objects.filter(run_id=run_id, step=step).values("fence", "attempt", "iteration").first()
        if row != {"fence": fence, "attempt": attempt, "iteration": iteration}:
            return []  # taken over, cancelled or timed out since: the attempt is no longer this worker's
        left = settings.FORGE_ARTIFACT_RUN_MAX_BYTES - _used(run_id, step, attempt, iteration)
        files_left = RUN_FILES - Artifact.objects.filter(run_id=run_id).exclude(
            step=step, attempt=attempt, iteration=iteration).count()
        rows, refusals, unkept = [], list(refused), 0
        for item in kept:
            if len(rows) >= files_left:
                unkept += 1
                continue
            if len(item.path) > PATH_CHARS:
                refusals.append(Refused(item.path[:PATH_CHARS], f"a path longer than {PATH_CHARS} characters"))
                continue
            if item.size > left:
                refusals.append(Refused(item.path, f"over the run's bound for artifacts ({max(0, left)} bytes "
                                                   f"were left)"))
                continue
            left -= item.size
            stored = stored_name(run_id, item.sha256)
            if item.copy is not None:
                (root / stored).parent.mkdir(parents=True, exist_ok=True)
                os.replace(item.copy, root / stored)
            rows.append(Artifact(run_id=run_id, step=step, attempt=attempt, iteration=iteration, path=item.path,
                                 size=item.size, sha256=item.sha256, stored=stored, created_at=now))
        if unkept:
            refusals.append(Refused(".", f"{unkept} more files matched, over the run's bound of {RUN_FILES} files "
                                         f"kept"))
        mine = Artifact.objects.filter(run_id=run_id, step=step, attempt=attempt, iteration=iteration)
        mine.exclude(path__in=[r.path for r in rows]).delete()  # a set of an earlier run of this attempt
        Artifact.objects.bulk_create(rows, update_conflicts=True,
                                     unique_fields=["run", "step", "attempt", "iteration", "path"],
                                     update_fields=["size", "sha256", "stored", "created_at"])
        _refusals(run_id, step, attempt, iteration, refusals, now)
    return rows


def _refusals(run_id: int, step: str, attempt: int, iteration: int, refused: list[Refused], now) -> None:
    """One event per refusal, said once however often the attempt runs, up to the run's RUN_REFUSALS events; past
    it, the collection's others are one event that counts them."""
    said = {(data.get("path"), data.get("reason")) for data in RunEvent.objects.filter(
        run_id=run_id, step=step, kind=REFUSED, data__attempt=attempt, data__iteration=iteration,
    ).values_list("data", flat=True) if isinstance(data, dict)}
    new = [r for r in refused if (r.path, r.reason) not in said]
    if not new:
        return
    left = max(0, RUN_REFUSALS - RunEvent.objects.filter(run_id=run_id, kind=REFUSED).count())
    listed = new[:left]
    if len(new) > left:
        summary = Refused(".", f"{len(new) - left} more matches not kept, over the run's bound of {RUN_REFUSALS} "
                               f"refusals listed")
        if (summary.path, summary.reason) not in said:
            listed.append(summary)
    RunEvent.objects.bulk_create([
        RunEvent(run_id=run_id, kind=REFUSED, step=step, at=now,
                 data={"attempt": attempt, "iteration": iteration, "path": r.path, "reason": r.reason})
        for r in listed])
