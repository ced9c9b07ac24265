"""Validation of what goes together in a loop and a mock block (spec sections 9 and 11)."""

from __future__ import annotations

from typing import Any

# What `${loop.…}` may name in a loop step's templates (engine/interpreter/loops.py computes them).
LOOP_VALUES = frozenset({"iteration", "previous_output", "reply", "replies", "cycle", "review", "fix"})
REVIEW_FIELDS = ("max_cycles", "on_request_changes")
ITERATE_FIELDS = ("max_iterations", "until", "gate")
SEQUENCE_EXCLUDES = ("stdout", "outputs", "error", "fail_times")


def check_loop(validator: Any, check: Any) -> None:
    """A loop is a review cycle or an iterate loop, never both, and has what its flavour needs."""
    loop = check.raw.get("loop")
    if not isinstance(loop, dict):
        return
    base = ("steps", check.index, "loop")
    for key in ("max_iterations", "max_cycles", "on_request_changes"):
        if key in loop and loop[key] is None:  # a bound written null is no loop without a bound
            validator.report("bad_type", f"`loop.{key}` is null; give it a value or leave it out", base + (key,),
                             check)
    review = [key for key in REVIEW_FIELDS if key in loop]
    iterate = [key for key in ITERATE_FIELDS if key in loop]
    if review and iterate:
        validator.report("conflicting_loop", f"a loop is a review cycle ({', '.join(REVIEW_FIELDS)}) or an "
                         f"iterate loop ({', '.join(ITERATE_FIELDS)}), not both: {', '.join(iterate)} cannot go "
                         f"with {', '.join(review)}", base + (iterate[0],), check, key=True)
    elif len(review) == 1:
        missing = next(key for key in REVIEW_FIELDS if key not in loop)
        validator.report("missing_field", f"a review cycle needs both `max_cycles` and `on_request_changes`; "
                         f"`loop.{missing}` is missing", base, check)
    elif not review and "max_iterations" not in loop:
        validator.report("missing_field", "a loop needs `max_iterations` (an iterate loop) or `max_cycles` with "
                         "`on_request_changes` (a review cycle)", base, check)


def check_mock(validator: Any, check: Any) -> None:
    """`mock.sequence` answers every call, so the single-answer fields cannot stand beside it."""
    mock = check.raw.get("mock")
    if not isinstance(mock, dict) or "sequence" not in mock:
        return
    for key in SEQUENCE_EXCLUDES:
        if key in mock:
            validator.report("bad_type", f"`mock.{key}` cannot go with `mock.sequence`: the sequence answers each "
                             "call (put stdout, outputs or error in its items)", ("steps", check.index, "mock", key),
                             check, key=True)
