"""Waiting on a condition with a deadline, never on a sleep being long enough."""

from __future__ import annotations

import time


def wait_until(predicate, seconds: float = 60) -> bool:
    """Whether `predicate()` became true within `seconds` (checked every 50 ms, and once more at the end)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())
