"""Python steps for cluster tests: each call appends a line to a ledger, so a test can count executions."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path


def ledger(call) -> dict:
    """Record this execution."""
    _record(call)
    return {"done": True}


def gated(call) -> dict:
    """Say this execution started (a marker holding the worker's pid), wait until the test opens the step's gate
    (tests/cluster/harness.py::Gates), then record this execution in the ledger."""
    gates = Path(os.environ["FORGE_TEST_GATES"])
    marker = gates / f"started.{call.step}.{uuid.uuid4().hex}"
    partial = gates / f".{marker.name}.part"
    partial.write_text(str(os.getpid()))
    partial.rename(marker)  # whole, or not there: the test reads the pid as soon as it sees the name
    gate = gates / f"open.{call.step}"
    while not gate.exists():
        if call.cancel.wait(0.05):
            return {"cancelled": True}
    _record(call)
    return {"done": True}


def crash(call) -> None:
    """Record this execution, then die as a crashing step would: SIGKILL of the worker running it."""
    _record(call)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # not reached


def _record(call) -> None:
    with open(os.environ["FORGE_TEST_LEDGER"], "a", encoding="utf-8") as file:
        file.write(f"{call.run_id} {call.step} {call.attempt}\n")
