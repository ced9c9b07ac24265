"""The built-in `mock` agent (spec section 11): deterministic results from the step's `mock` block."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from engine.executors.base import StepRequest, StepResult
from engine.model import MockSpec
from engine.outputs import default_value


@dataclass(frozen=True, slots=True)
class MockOutcome:
    """The result and when it arrives; `result` None means the mock never returns."""

    delay_s: float
    result: StepResult | None


_DEFAULT = MockSpec()


def plan(request: StepRequest) -> MockOutcome:
    """What this call returns, without waiting: the local runner turns the delay into (virtual) time."""
    mock = request.spec.mock or _DEFAULT
    if mock.timeout:
        return MockOutcome(mock.delay_s, None)
    usage = {"tokens": mock.tokens or 0, "cost": mock.cost or 0.0}
    answer = mock  # what this call returns: the block itself, or the sequence's item for this call
    if mock.sequence:
        answer = mock.sequence[min(request.call, len(mock.sequence)) - 1]
        if answer.error is not None:
            return MockOutcome(mock.delay_s, StepResult(ok=False, error=answer.error, error_code="agent_error",
                                                        **usage))
    elif request.call <= mock.fail_times:
        message = mock.error or f"mock failure (call {request.call} of {mock.fail_times} set to fail)"
        return MockOutcome(mock.delay_s, StepResult(ok=False, error=message, error_code="agent_error", **usage))
    if answer.outputs is not None:
        outputs = dict(answer.outputs)
    else:
        outputs = {name: default_value(schema.type) for name, schema in request.spec.outputs.items()}
    if answer.stdout is not None:
        stdout = answer.stdout
    else:
        stdout = json.dumps(outputs, ensure_ascii=False) if outputs else "{}"
    return MockOutcome(mock.delay_s, StepResult(ok=True, outputs=outputs, stdout=stdout, **usage))


class MockExecutor:
    """Waits the mock's delay (or until cancelled), then returns its planned result."""

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        outcome = plan(request)
        if outcome.result is None:
            if cancel.wait(request.timeout_s):
                return StepResult.failure("cancelled", "cancelled")
            return StepResult.failure(f"timed out after {request.timeout_s:g} s", "timeout")
        if outcome.delay_s > 0 and cancel.wait(min(outcome.delay_s, request.timeout_s)):
            return StepResult.failure("cancelled", "cancelled")
        if outcome.delay_s > request.timeout_s:
            return StepResult.failure(f"timed out after {request.timeout_s:g} s", "timeout")
        return outcome.result
