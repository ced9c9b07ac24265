"""Replaying a recorded event log: the same events must give the same commands."""

from __future__ import annotations

import json
from typing import Any

from engine.interpreter.events import event_from_json
from engine.interpreter.machine import Interpreter
from engine.interpreter.state import Options
from engine.workflow import Workflow


class ReplayDivergence(AssertionError):
    """The interpreter answered an event of the log with other commands than the log recorded."""

    def __init__(self, index: int, expected: list, actual: list):
        self.index, self.expected, self.actual = index, expected, actual
        super().__init__(f"event {index} of the log: expected commands {_short(expected)}, got {_short(actual)}")


def entry(event: Any, commands: list) -> dict[str, Any]:
    """One log entry: an event and the commands it produced, as JSON."""
    return {"event": event.to_json(), "commands": normalise([c.to_json() for c in commands])}


def normalise(value: Any) -> Any:
    """JSON round trip, so tuples and lists compare equal."""
    return json.loads(json.dumps(value))


def replay_log(workflow: Workflow, log: dict[str, Any]) -> Interpreter:
    """Feed every event of `log` to a new interpreter, checking each answer.

    Args:
        workflow: the workflow the log was recorded with.
        log: {"run_id", "args", "options", "entries": [{"event", "commands"}]}.

    Returns:
        The interpreter after the last event.

    Raises:
        ReplayDivergence: at the first event whose commands differ.
    """
    interpreter = Interpreter.new(workflow, run_id=log["run_id"], args=log.get("args") or {},
                                  options=Options.from_json(log["options"]))
    for index, item in enumerate(log["entries"]):
        commands = normalise([c.to_json() for c in interpreter.advance(event_from_json(item["event"]))])
        if commands != item["commands"]:
            raise ReplayDivergence(index, item["commands"], commands)
    return interpreter


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 300 else text[:297] + "..."
