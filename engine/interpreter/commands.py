"""Commands the interpreter answers with. The caller carries them out; the interpreter does no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.interpreter.messages import Message, from_json, registry


@dataclass(slots=True)
class Dispatch(Message):
    """Run one attempt (and loop iteration) of an agent step: governance gates, then the executor."""

    step: str
    attempt: int
    agent: str
    command: str
    iteration: int = 0
    call: int = 1  # how many times this step's agent has been called, this call included
    stdin: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 3600.0
    previous_output: str | None = None
    governance_approved: bool = False  # a human approved a governance hold for this attempt
    env: dict[str, str] = field(default_factory=dict)  # a shell command's value variables (FORGE_V1, ...)
    agent_config: dict[str, Any] = field(default_factory=dict)  # the step's overlay of its agent's settings

    def to_json(self) -> dict[str, Any]:
        data = Message.to_json(self)
        for name in ("env", "agent_config"):
            if not data[name]:
                del data[name]  # commands of steps without them read as they always have (golden replays)
        return data


@dataclass(slots=True)
class RequestApproval(Message):
    """Ask a person to decide; `kind` is approval, escalation or hold."""

    approval: str
    step: str
    kind: str
    options: tuple[str, ...]
    message: str = ""
    approvers: tuple[str, ...] = ()


@dataclass(slots=True)
class StartChild(Message):
    step: str
    attempt: int
    workflow: str
    version: int | None = None
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CancelChild(Message):
    step: str
    reason: str


@dataclass(slots=True)
class ScheduleTimer(Message):
    """Feed TimerFired(timer) at `fire_at`. A timer that is no longer wanted is ignored when it fires."""

    timer: str
    fire_at: float
    purpose: str
    step: str | None = None


@dataclass(slots=True)
class CancelStep(Message):
    """Stop an in-flight attempt (kill its process, drop its callback)."""

    step: str
    attempt: int
    reason: str


@dataclass(slots=True)
class StepChanged(Message):
    """A step's status or wait reason changed: what the run view shows and the step row stores."""

    step: str
    status: str
    attempt: int
    wait: str | None = None
    error: str | None = None
    error_code: str | None = None


@dataclass(slots=True)
class FinishRun(Message):
    status: str
    error: str | None = None
    error_code: str | None = None


COMMANDS = registry(Dispatch, RequestApproval, StartChild, CancelChild, ScheduleTimer, CancelStep,
                    StepChanged, FinishRun)


def command_from_json(data: dict) -> Message:
    if data.get("type") == "RequestApproval":
        data = {**data, "options": tuple(data.get("options", ())), "approvers": tuple(data.get("approvers", ()))}
    return from_json(data, COMMANDS)
