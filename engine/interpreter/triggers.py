"""Trigger rules (spec section 4): what a step does once all its dependencies are final."""

from __future__ import annotations

from collections.abc import Iterable

from engine.interpreter.state import StepStatus

RUN = "run"
SKIP = "skip"
UPSTREAM_FAILED = "upstream_failed"
RUN_HALTED = "run_halted"


def decide(rule: str, dependency_statuses: Iterable[str]) -> str:
    """RUN, SKIP, UPSTREAM_FAILED or RUN_HALTED for a step whose dependencies are all final.

    A step with no dependencies always runs.
    """
    total = completed = skipped = failed = cancelled = 0
    for status in dependency_statuses:
        total += 1
        if status == StepStatus.COMPLETED:
            completed += 1
        elif status == StepStatus.SKIPPED:
            skipped += 1
        elif status in StepStatus.FAILED_LIKE:
            failed += 1
        else:
            cancelled += 1
    if total == 0 or rule == "all_done":
        return RUN
    if rule == "all_done_default":
        if failed:
            return UPSTREAM_FAILED
        if cancelled:
            return RUN_HALTED
        return SKIP if skipped == total else RUN
    if rule == "all_success":
        return RUN if completed == total else SKIP
    if rule == "one_success":
        return RUN if completed else SKIP
    if rule == "none_failed_min_one_success":
        return RUN if completed and not failed else SKIP
    raise ValueError(f"unknown trigger rule {rule!r}")
