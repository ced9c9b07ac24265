"""Carrying out a Dispatch: the governance gates, then the step's agent, inline or through the queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from engine.executors import StepRequest, StepResult
from engine.executors import mock as mock_agent
from engine.governance import evaluate
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from forge.governance.context import ALLOWED, GovernanceView
from forge.governance.models import TokenEvent
from forge.runs import agents, bridge
from forge.runs.models import RunInput
from forge.runs.recovery import INBOX

if TYPE_CHECKING:
    from forge.runs.runtime import Round


def completion_key(step: str, attempt: int, iteration: int) -> str:
    """One completion per step attempt (and loop iteration): the idempotency key of its input."""
    return f"done:{step}:{attempt}:{iteration}"


def lease_until(now):
    return now + timedelta(seconds=settings.FORGE_LEASE_S)


def request_of(run_id: int, dispatch: dict, spec, workdir: str | None) -> StepRequest:
    return StepRequest.from_dispatch(cmd.command_from_json(dispatch), spec, run_id=str(run_id), workdir=workdir)


@dataclass
class InlineCall:
    """A fast step run by the advancing worker right after its round commits (a python callable)."""

    run_id: int
    step: str
    attempt: int
    iteration: int
    request: StepRequest
    agent: object
    result: StepResult | None = field(default=None)

    def execute(self) -> None:
        self.result = agents.run_inline(self.agent, self.request)

    def result_input(self) -> RunInput:
        event = self.result.event(self.request, timezone.now().timestamp())
        return RunInput(key=completion_key(self.step, self.attempt, self.iteration), event=event.to_json())


class Dispatcher:
    """Governs and starts the dispatches of one round."""

    def __init__(self, round_: Round):
        self.round = round_
        self.view = GovernanceView(round_.now)

    def next_fence(self) -> int:
        self.round.run.fences += 1
        return self.round.run.fences

    def dispatch(self, command: cmd.Dispatch) -> None:
        r = self.round
        spec = r.workflow.by_id[command.step].model
        ctx = self.view.context(run=r.run, workflow=r.workflow.name, dispatch=command,
                                capabilities=tuple(spec.capabilities))
        decision = evaluate(ctx)
        detail = decision.to_json()
        r.log("governance", command.step, {"attempt": command.attempt, **detail})
        target = f"agent:{command.agent}"
        if decision.outcome == "block":
            r.audit("forge.governance.blocked", step=command.step, attempt=command.attempt, target=target,
                    detail=detail)
            r.immediate.append(ev.DispatchBlocked(command.step, command.attempt, decision.gate, decision.code,
                                                  decision.retryable, decision.message, at=r.at))
            return
        if decision.outcome == "hold":
            r.audit("forge.governance.held", step=command.step, attempt=command.attempt, target=target,
                    detail=detail)
            r.immediate.append(ev.DispatchHeld(command.step, command.attempt, decision.gate, decision.message,
                                               at=r.at))
            return
        r.audit(ALLOWED, step=command.step, attempt=command.attempt, target=target)
        self.view.running[command.agent] += 1
        self.view.dispatched[command.agent] += 1
        self._start(command, spec, self.view.agent(command.agent))

    def _start(self, command: cmd.Dispatch, spec, agent) -> None:
        r = self.round
        fence = self.next_fence()
        payload = command.to_json()
        deadline = r.now + timedelta(seconds=command.timeout_s)
        r.step_fields(command.step).update(fence=fence, agent=agent.name, dispatch=payload, executing=False,
                                           lease_owner="", lease_expires_at=lease_until(r.now),
                                           deadline_at=deadline)
        request = request_of(r.run.pk, payload, spec, None)
        key = completion_key(command.step, command.attempt, command.iteration)
        if agent.provider == "mock":
            self._mock(request, key)
        elif agent.provider == "python" and agents.inline(agent):
            r.inline.append(InlineCall(r.run.pk, command.step, command.attempt, command.iteration, request, agent))
        else:
            r.after_commit.append(lambda: agents.enqueue_execution(r.run.pk, command.step, command.attempt, fence))

    def _mock(self, request: StepRequest, key: str) -> None:
        """The mock agent's result is known now; a delay or a timeout only decides when it is fed."""
        r = self.round
        outcome = mock_agent.plan(request)
        if outcome.result is None or outcome.delay_s > request.timeout_s:
            result = StepResult.failure(f"timed out after {request.timeout_s:g} s", "timeout")
            delay = request.timeout_s
        else:
            result, delay = outcome.result, outcome.delay_s
        due = r.at + delay
        r.add_input(key, result.event(request, due), due_at=bridge.to_datetime(due) if delay else r.now)
        r.step_fields(request.step).update(lease_owner=INBOX, lease_expires_at=None)

    def record_spend(self, event: ev.StepFinished) -> None:
        """Tokens and cost of a result fed this round (a result that is never fed records its own)."""
        r = self.round
        record_spend(run_id=r.run.pk, workflow=r.workflow.name, agent=r.workflow.by_id[event.step].model.agent or "",
                     step=event.step, attempt=event.attempt, iteration=event.iteration, tokens=event.tokens,
                     cost=event.cost, at=r.now)


def record_spend(*, run_id: int, workflow: str, agent: str, step: str, attempt: int, iteration: int,
                 tokens: int, cost: float, at) -> None:
    """One TokenEvent per call of an agent, however often its result is reported."""
    TokenEvent.objects.bulk_create([TokenEvent(
        at=at, run_id=run_id, step=step, attempt=attempt, iteration=iteration, agent=agent, workflow=workflow,
        tokens=max(0, int(tokens)), cost=max(0.0, float(cost)))], ignore_conflicts=True)
