"""Events the interpreter is fed. Each carries `at`, the time it happened (seconds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.interpreter.messages import Message, from_json, registry


class EventRejected(ValueError):
    """An event that does not fit the run (a decision nobody asked for, a wrong option); nothing changed."""


@dataclass(slots=True)
class RunStarted(Message):
    """The run begins. `hold`, when given, holds it before its first step until a person approves its start (a
    schedule that requires approval, spec 15): `{"message": str, "approvers": [group, ...]}`."""

    at: float = 0.0
    hold: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = Message.to_json(self)
        if self.hold is None:
            del data["hold"]  # a run started without a hold reads as it always has (golden replays)
        return data


@dataclass(slots=True)
class StepFinished(Message):
    """An executor's result for one attempt (and loop iteration) of an agent step."""

    step: str
    attempt: int
    ok: bool
    iteration: int = 0
    outputs: dict[str, Any] | None = None
    stdout: str = ""
    error: str | None = None
    error_code: str | None = None  # "timeout" marks an attempt the executor timed out
    tokens: int = 0  # the total; input_tokens and output_tokens are its split when the agent reported one
    cost: float = 0.0
    at: float = 0.0
    model: str | None = None  # the model that answered, as the agent reported it (None: not reported)
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(slots=True)
class DispatchBlocked(Message):
    """A governance gate blocked the dispatch of an attempt."""

    step: str
    attempt: int
    gate: str
    code: str
    retryable: bool = False
    message: str = ""
    at: float = 0.0


@dataclass(slots=True)
class DispatchHeld(Message):
    """A governance gate held the dispatch of an attempt for a human decision."""

    step: str
    attempt: int
    gate: str
    message: str = ""
    at: float = 0.0


DECISIONS = ("approve", "reject", "retry", "skip", "abort")  # approve/reject an approval; retry/skip/abort an escalation


@dataclass(slots=True)
class ApprovalDecided(Message):
    """A decision on the step's pending approval: approve/reject, or retry/skip/abort for an escalation.

    `by` names who decided, for messages; `by_id` identifies them to the runtime (None: no person, e.g. the
    system or the local runner). Events written before `by_id` existed load with None.
    """

    step: str
    decision: str
    by: str | None = None
    comment: str | None = None
    at: float = 0.0
    by_id: int | None = None


MAX_REPLY_BYTES = 65536  # spec 9: a reply is at most 64 KiB of UTF-8


@dataclass(slots=True)
class ReplyGiven(Message):
    """A person's free-text answer to the step's pending reply request (a loop's reply gate, spec section 9)."""

    step: str
    text: str
    by: str | None = None
    at: float = 0.0
    by_id: int | None = None


@dataclass(slots=True)
class TimerFired(Message):
    timer: str
    at: float = 0.0


@dataclass(slots=True)
class ChildFinished(Message):
    """A sub-workflow run ended; `status` is completed, failed or cancelled."""

    step: str
    attempt: int
    status: str
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    at: float = 0.0


@dataclass(slots=True)
class CancelRequested(Message):
    by: str | None = None
    reason: str = ""
    at: float = 0.0


@dataclass(slots=True)
class RunAborted(Message):
    """The runtime stopped the run for good (e.g. `crash_loop`): it fails with this code and message."""

    code: str
    message: str
    at: float = 0.0


EVENTS = registry(RunStarted, StepFinished, DispatchBlocked, DispatchHeld, ApprovalDecided, ReplyGiven, TimerFired,
                  ChildFinished, CancelRequested, RunAborted)


def event_from_json(data: dict) -> Message:
    return from_json(data, EVENTS)
