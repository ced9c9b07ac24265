"""Helpers for interpreter tests: compile a workflow from YAML text and drive the state machine by hand."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from engine.interpreter import (
    ApprovalDecided, Dispatch, Interpreter, Options, ReplyGiven, RunStarted, StepChanged, StepFinished, TimerFired,
)
from engine.report import report
from engine.runner import LocalRunner
from engine.validation import load_workflow


def compile_yaml(text: str):
    return load_workflow(textwrap.dedent(text))


def run_fast(text: str, decisions: dict[str, str] | None = None, **options) -> dict[str, Any]:
    """Run through the local runner in virtual time; the runner's JSON report."""
    outcome = LocalRunner(compile_yaml(text), decisions=decisions, fast=True,
                          options=Options(**options) if options else None).run()
    return report(outcome)


class Driver:
    """Feeds events to an interpreter by hand and keeps every command it answered."""

    def __init__(self, text: str, args: dict | None = None, **options):
        self.workflow = compile_yaml(text)
        self.machine = Interpreter.new(self.workflow, run_id="run-1", args=args,
                                       options=Options(**options) if options else None)
        self.now = 1000.0
        self.commands: list = []

    def feed(self, event) -> list:
        commands = self.machine.advance(event)
        self.commands.extend(commands)
        return commands

    def start(self) -> list:
        return self.feed(RunStarted(at=self.now))

    def ok(self, step: str, outputs: dict | None = None, stdout: str = "", at: float | None = None,
           attempt: int | None = None, iteration: int | None = None) -> list:
        st = self.machine.state.steps[step]
        return self.feed(StepFinished(step, st.attempt if attempt is None else attempt, True,
                                      st.iteration if iteration is None else iteration, outputs or {}, stdout,
                                      at=self.now if at is None else at))

    def fail(self, step: str, error: str = "boom", code: str | None = None, at: float | None = None) -> list:
        st = self.machine.state.steps[step]
        return self.feed(StepFinished(step, st.attempt, False, st.iteration, None, "", error, code,
                                      at=self.now if at is None else at))

    def decide(self, step: str, decision: str, by: str = "alice") -> list:
        return self.feed(ApprovalDecided(step, decision, by=by, at=self.now))

    def reply(self, step: str, text: str, by: str = "alice") -> list:
        return self.feed(ReplyGiven(step, text, by=by, at=self.now))

    def fire(self, timer_command) -> list:
        self.now = max(self.now, timer_command.fire_at)
        return self.feed(TimerFired(timer_command.timer, at=timer_command.fire_at))

    def status(self, step: str) -> str:
        return self.machine.state.steps[step].status

    def step(self, step: str):
        return self.machine.state.steps[step]


def of(commands: list, kind: type) -> list:
    return [c for c in commands if isinstance(c, kind)]


def dispatched(commands: list) -> list[str]:
    return [c.step for c in commands if isinstance(c, Dispatch)]


def changes(commands: list, step: str) -> list[str]:
    return [c.status for c in commands if isinstance(c, StepChanged) and c.step == step]


def checkpoint(machine: Interpreter) -> dict:
    """The state as a checkpoint would store it: through JSON text."""
    return json.loads(json.dumps(machine.state.to_json()))
