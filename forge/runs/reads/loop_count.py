"""Where a loop step is, in words: "iteration 3 of 8", or for a reviewer/fix cycle "cycle 1 of 2" (the fix cycle,
0 in the first review, as `${loop.cycle}` counts it: spec section 9). The run view's graph node and the step panel
say it; run.js words a step event's `iteration` by the same rule (`loopCount`)."""

from __future__ import annotations

from typing import Any


def loop_of(loop) -> dict[str, Any] | None:
    """What the page needs of a step's loop to word its count live (None: no loop)."""
    if loop is None:
        return None
    if loop.review:
        return {"review": True, "max": loop.max_cycles or 0}
    return {"review": False, "max": loop.max_iterations or 0}


def loop_count(loop, iteration: int) -> str:
    """`iteration`: the step's count of calls (a review loop: reviews and fixes) or iterations; 0: not started."""
    return count_words(loop_of(loop), iteration)


def count_words(shape: dict[str, Any] | None, iteration: int) -> str:
    """`loop_count` from `loop_of`'s shape (what the page holds of a node)."""
    if shape is None or not iteration:
        return ""
    if shape["review"]:
        return f"cycle {iteration // 2} of {shape['max']}"  # calls: review, fix 1, review 2, fix 2, ...
    return f"iteration {iteration} of {shape['max']}"
