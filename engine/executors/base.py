"""What an executor is given and what it returns; the bridge between Dispatch and StepFinished."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from engine.interpreter.commands import Dispatch
from engine.interpreter.events import StepFinished
from engine.model import Step


@dataclass(slots=True)
class StepRequest:
    """One call of a step's agent."""

    run_id: str
    step: str
    attempt: int
    agent: str
    command: str
    spec: Step
    iteration: int = 0
    call: int = 1
    stdin: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 3600.0
    previous_output: str | None = None
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # the command's value variables (shell agents)
    agent_config: dict[str, Any] = field(default_factory=dict)  # the step's overlay of its agent's settings

    @classmethod
    def from_dispatch(cls, dispatch: Dispatch, spec: Step, *, run_id: str, workdir: str | None = None) -> StepRequest:
        return cls(run_id=run_id, step=dispatch.step, attempt=dispatch.attempt, agent=dispatch.agent,
                   command=dispatch.command, spec=spec, iteration=dispatch.iteration, call=dispatch.call,
                   stdin=dispatch.stdin, inputs=dict(dispatch.inputs), timeout_s=dispatch.timeout_s,
                   previous_output=dispatch.previous_output, workdir=workdir, env=dict(dispatch.env),
                   agent_config=dict(dispatch.agent_config))


@dataclass(slots=True)
class StepResult:
    """What the agent produced. `error_code` "timeout" means the executor stopped it at its timeout.

    `deferred` means the agent accepted the step and will report its result
    later (an HTTP gateway's 202 and callback); the other fields are then unset.
    """

    ok: bool
    outputs: dict[str, Any] | None = None
    stdout: str = ""
    error: str | None = None
    error_code: str | None = None
    tokens: int = 0  # the total; input_tokens and output_tokens are its split when the agent reported one
    cost: float = 0.0
    deferred: bool = False
    model: str | None = None  # the model that answered, as the agent reported it
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def accepted(cls) -> StepResult:
        """The agent took the step; its result arrives by callback."""
        return cls(ok=True, deferred=True)

    @classmethod
    def failure(cls, message: str, code: str = "agent_error", stdout: str = "") -> StepResult:
        return cls(ok=False, stdout=stdout, error=message, error_code=code)

    def event(self, request: StepRequest, at: float) -> StepFinished:
        return StepFinished(step=request.step, attempt=request.attempt, iteration=request.iteration, ok=self.ok,
                            outputs=self.outputs, stdout=self.stdout, error=self.error, error_code=self.error_code,
                            tokens=self.tokens, cost=self.cost, at=at, model=self.model,
                            input_tokens=self.input_tokens, output_tokens=self.output_tokens)


SECRET_SHOWN = "[secret]"


def secrets_hidden(result: StepResult, secrets: list[str]) -> StepResult:
    """`result` with each of `secrets` replaced by SECRET_SHOWN in its outputs, stdout, error and model: what an agent
    answers may repeat a secret it was sent (a gateway quoting the token it refuses), and a result is shown to
    every person who may see the run."""
    secrets = sorted({secret for secret in secrets if secret}, key=len, reverse=True)  # a longer one whole
    if not secrets:
        return result

    def hidden(value: Any) -> Any:
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, SECRET_SHOWN)
            return value
        if isinstance(value, dict):
            return {hidden(key): hidden(item) for key, item in value.items()}
        if isinstance(value, list):
            return [hidden(item) for item in value]
        return value

    return replace(result, outputs=hidden(result.outputs), stdout=hidden(result.stdout), error=hidden(result.error),
                   model=hidden(result.model))


class Executor(Protocol):
    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        """Run the step's agent until it returns, its timeout passes or `cancel` is set."""
