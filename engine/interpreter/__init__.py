"""The interpreter: a deterministic state machine (events in, commands out)."""

from engine.interpreter.commands import (
    COMMANDS, CancelChild, CancelStep, Dispatch, FinishRun, RequestApproval, ScheduleTimer, StartChild,
    StepChanged, command_from_json,
)
from engine.interpreter.events import (
    DECISIONS, EVENTS, MAX_REPLY_BYTES, ApprovalDecided, CancelRequested, ChildFinished, DispatchBlocked, DispatchHeld,
    ReplyGiven, RunAborted, RunStarted, StepFinished, TimerFired, event_from_json,
)
from engine.interpreter.machine import EventRejected, Interpreter, initial_variables
from engine.interpreter.replay import ReplayDivergence, replay_log
from engine.interpreter.restart import restart_state, steps_to_rerun
from engine.interpreter.state import Options, RunState, RunStatus, StepState, StepStatus, Wait

__all__ = [
    "COMMANDS", "DECISIONS", "EVENTS", "ApprovalDecided", "CancelChild", "CancelRequested", "CancelStep", "ChildFinished",
    "Dispatch", "DispatchBlocked", "MAX_REPLY_BYTES", "ReplyGiven", "DispatchHeld", "EventRejected", "ReplayDivergence", "FinishRun", "Interpreter", "Options",
    "RequestApproval", "RunAborted", "RunStarted", "RunState", "RunStatus", "ScheduleTimer", "StartChild", "StepChanged",
    "StepFinished", "StepState", "StepStatus", "TimerFired", "Wait", "command_from_json", "event_from_json",
    "initial_variables", "replay_log", "restart_state", "steps_to_rerun",
]
