"""Python steps for cluster tests: each call appends a line to a ledger, so a test can count executions."""

from __future__ import annotations

import os


def ledger(call) -> dict:
    """Work for FORGE_TEST_STEP_SECONDS (stopping early if cancelled), then record this execution."""
    seconds = float(os.environ.get("FORGE_TEST_STEP_SECONDS", "0"))
    if seconds and call.cancel.wait(seconds):
        return {"cancelled": True}
    line = f"{call.run_id} {call.step} {call.attempt}\n"
    with open(os.environ["FORGE_TEST_LEDGER"], "a", encoding="utf-8") as file:
        file.write(line)
    return {"done": True}
