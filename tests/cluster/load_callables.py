"""Python steps for the load tests: each holds its worker until the test releases it, and a gauge counts how
many are inside at once.

The test controls when steps end (it writes `release` in FORGE_TEST_LOAD_DIR), so dispatches that race each
other overlap on any machine, however slow. A step never released ends by itself after HOLD_S.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time

from engine.executors import StepResult

HOLD_S = 300
COST = 1.0


def _path(name: str) -> str:
    return os.path.join(os.environ["FORGE_TEST_LOAD_DIR"], name)


@contextlib.contextmanager
def gauge():
    """The gauge's counts, read and written back under an exclusive lock shared by every worker process."""
    with open(_path("gauge.json"), "a+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        counts = json.loads(file.read() or "{}")
        yield counts
        file.seek(0)
        file.truncate()
        file.write(json.dumps(counts))


def held(call) -> StepResult:
    """Enter the gauge, wait for the release (or a cancel), leave; report COST spent."""
    with gauge() as counts:
        counts["inside"] = counts.get("inside", 0) + 1
        counts["peak"] = max(counts.get("peak", 0), counts["inside"])
        counts["started"] = counts.get("started", 0) + 1
    try:
        deadline = time.monotonic() + HOLD_S
        while not os.path.exists(_path("release")) and time.monotonic() < deadline:
            if call.cancel.wait(0.05):
                break
    finally:
        with gauge() as counts:
            counts["inside"] -= 1
    return StepResult(ok=True, outputs={}, stdout="held", tokens=100, cost=COST)
