"""The interpreter's state as plain data: what a checkpoint stores, and nothing derived."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

STATE_VERSION = 1


class StepStatus:
    PENDING = "pending"
    WAITING = "waiting"  # held for a person (approval, escalation, governance hold)
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    TERMINAL = frozenset({COMPLETED, FAILED, TIMED_OUT, SKIPPED, CANCELLED})
    FAILED_LIKE = frozenset({FAILED, TIMED_OUT})


class RunStatus:
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


class Wait:
    """Why a non-final step is not running right now (None: it is, or it has not been reached)."""

    QUEUED = "queued"          # ready, waiting for a concurrency slot; dispatch starts a new attempt
    REDISPATCH = "redispatch"  # ready again after a gate retry or an approved hold; same attempt
    RETRY = "retry"            # failed, retrying after a backoff timer
    GATE_RETRY = "gate_retry"  # a governance gate blocked it for now; retrying after a timer
    APPROVAL = "approval"
    ESCALATION = "escalation"
    HOLD = "hold"
    REPLY = "reply"            # a loop's reply gate: waiting for a person's answer before the next iteration
    CHILD = "child"            # a sub-workflow run is in flight


_STEP_FIELDS = ("status", "wait", "attempt", "calls", "retries", "iteration", "gate_retries", "escalated",
                "hold_approved", "outputs", "stdout", "error", "error_code", "started_at", "finished_at",
                "carried", "tokens", "cost", "timer", "history", "loop_from", "agent_calls")


class StepState:
    """One step's progress in one run."""

    __slots__ = _STEP_FIELDS

    def __init__(self):
        self.status = StepStatus.PENDING
        self.wait: str | None = None
        self.attempt = 0
        self.calls = 0
        self.retries = 0
        self.iteration = 0
        self.gate_retries = 0
        self.escalated = False
        self.hold_approved = False
        self.outputs: dict[str, Any] | None = None
        self.stdout: str | None = None
        self.error: str | None = None
        self.error_code: str | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.carried = False
        self.tokens = 0
        self.cost = 0.0
        self.timer: str | None = None
        self.history: list[dict[str, Any]] = []  # a loop step's calls, in order (spec section 9)
        self.loop_from = 0  # where in `history` the loop's current pass began (a retry after loop_exhausted)
        self.agent_calls: dict[str, int] = {}  # calls per agent, for the mock's fail_times and sequence

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _STEP_FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepState:
        state = cls()
        for name in _STEP_FIELDS:
            if name in data:
                setattr(state, name, data[name])
        return state


@dataclass
class Options:
    """Run settings the interpreter needs; part of the state so a replay sees the same ones."""

    max_concurrency: int = 16
    default_timeout_s: float = 3600.0
    shell_agents: tuple[str, ...] = ("shell",)
    gate_retry_delays_s: tuple[float, ...] = (1.0, 2.0, 4.0)

    def to_json(self) -> dict[str, Any]:
        return {"max_concurrency": self.max_concurrency, "default_timeout_s": self.default_timeout_s,
                "shell_agents": list(self.shell_agents), "gate_retry_delays_s": list(self.gate_retry_delays_s)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Options:
        return cls(data["max_concurrency"], data["default_timeout_s"], tuple(data["shell_agents"]),
                   tuple(data["gate_retry_delays_s"]))


@dataclass
class RunState:
    """A run's whole state. `to_json()` is the checkpoint."""

    run_id: str
    args: dict[str, Any]
    options: Options
    steps: dict[str, StepState]
    variables: dict[str, Any]
    status: str = RunStatus.PENDING
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    error_code: str | None = None
    halted: bool = False
    variable_order: list[list[str]] = field(default_factory=list)
    dispatch_order: list[str] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    timers: dict[str, dict[str, Any]] = field(default_factory=dict)
    seq: int = 0
    now: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The state as JSON data; it shares containers with the state (use `copy()` for a snapshot)."""
        return {
            "version": STATE_VERSION, "run_id": self.run_id, "args": self.args, "options": self.options.to_json(),
            "status": self.status, "started_at": self.started_at, "finished_at": self.finished_at,
            "error": self.error, "error_code": self.error_code, "halted": self.halted,
            "variables": self.variables, "variable_order": self.variable_order,
            "dispatch_order": self.dispatch_order, "approvals": self.approvals, "timers": self.timers,
            "seq": self.seq, "now": self.now,
            "steps": {step_id: step.to_json() for step_id, step in self.steps.items()},
        }

    def copy(self) -> RunState:
        """An independent copy: advancing either leaves the other as it was."""
        return RunState.from_json(copy.deepcopy(self.to_json()))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported state version {data.get('version')!r}")
        return cls(
            run_id=data["run_id"], args=data["args"], options=Options.from_json(data["options"]),
            steps={k: StepState.from_json(v) for k, v in data["steps"].items()}, variables=data["variables"],
            status=data["status"], started_at=data["started_at"], finished_at=data["finished_at"],
            error=data["error"], error_code=data["error_code"], halted=data["halted"],
            variable_order=data["variable_order"], dispatch_order=data["dispatch_order"],
            approvals=data["approvals"], timers=data["timers"], seq=data["seq"], now=data["now"])
