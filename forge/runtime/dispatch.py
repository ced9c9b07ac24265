"""Carrying out a Dispatch: the governance gates, then the step's agent, inline or through the queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from engine.executors import StepRequest, StepResult
from engine.executors import mock as mock_agent
from engine.governance import evaluate
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter.state import RunState, StepStatus
from engine.workflow import Workflow
from forge.audit import codes
from forge.governance import reservations
from forge.governance.context import GovernanceView, gateway_names
from forge.runs.models import RunInput
from forge.runs.models import StepResult as StepRow
from forge.runs.pinning import pin_at_dispatch, step_agents
from forge.runs.times import to_datetime
from forge.runtime import agents, inbox, leases, queue
from forge.runtime.effects import Effects


# The step row's `dispatch` is the engine's Dispatch, plus under this key the gateways routing chose, in the order
# the worker tries them, and the one that took the attempt (forge.runtime.gateways).
ROUTE = "route"


def request_of(run_id: int, dispatch: dict, spec, workdir: str | None) -> StepRequest:
    command = cmd.command_from_json({k: v for k, v in dispatch.items() if k != ROUTE})
    return StepRequest.from_dispatch(command, spec, run_id=str(run_id), workdir=workdir)


@dataclass
class InlineCall:
    """A fast step run by the advancing worker right after its round commits (a python callable). The worker
    holds its lease until the round that feeds its result (`rounds.advance`), however long it runs."""

    run_id: int
    step: str
    attempt: int
    iteration: int
    request: StepRequest
    agent: object
    fence: int
    result: StepResult | None = field(default=None)
    lease: leases.Lease = field(init=False)

    def __post_init__(self) -> None:
        self.lease = leases.Lease(self.run_id, self.step, self.fence)

    def execute(self) -> None:
        self.result = agents.execute(self.agent, self.request, self.lease.cancel)

    def result_input(self) -> RunInput:
        event = self.result.event(self.request, timezone.now().timestamp())
        return RunInput(key=inbox.completion(self.step, self.attempt, self.iteration), event=event.to_json())


class Dispatcher:
    """Governs and starts the dispatches of one round."""

    def __init__(self, effects: Effects, workflow: Workflow, state: RunState):
        self.effects = effects
        self.workflow = workflow
        self.state = state
        self.view = GovernanceView(effects.now)
        self._running_rows: dict[str, list[tuple]] = {}

    def dispatch(self, command: cmd.Dispatch) -> None:
        r = self.effects
        spec = self.workflow.by_id[command.step].model
        view, workflow = self.view, self.workflow.name
        if view.limited(workflow, command.agent):
            # Every limit the run's steps can meet is locked at once, before anything is counted.
            view.open_ledger(workflow, {command.agent, *step_agents(self.workflow)})
        live = view.agent(command.agent)  # governance reads the row; the call runs as the run pinned it
        agent = pin_at_dispatch(r.run, command.agent, live) if live is not None else None
        estimated = reservations.projected_cost(agent, spec)
        ctx = view.context(run=r.run, workflow=workflow, dispatch=command, capabilities=tuple(spec.capabilities),
                           running=self._running(command.agent), estimated_cost=estimated,
                           gateways=gateway_names(agent))
        decision = evaluate(ctx)
        detail = decision.to_json()
        route = ctx.route if ctx.gateways or spec.capabilities else None
        if route is not None:  # which gateway takes the attempt and why (the console's step panel says it)
            detail["route"] = route.to_json()
        r.log("governance", command.step, {"attempt": command.attempt, "estimated_cost": estimated, **detail})
        target = f"agent:{command.agent}"
        if decision.outcome == "block":
            r.audit(codes.GOVERNANCE_BLOCKED, step=command.step, attempt=command.attempt, target=target,
                    detail=detail)
            r.feed_next(ev.DispatchBlocked(command.step, command.attempt, decision.gate, decision.code,
                                                  decision.retryable, decision.message, at=r.at))
            return
        if decision.outcome == "hold":
            r.audit(codes.GOVERNANCE_HELD, step=command.step, attempt=command.attempt, target=target,
                    detail=detail)
            r.feed_next(ev.DispatchHeld(command.step, command.attempt, decision.gate, decision.message,
                                               at=r.at))
            return
        # the iteration makes this row the record a gateway's callback is checked against (forge/api/callbacks.py)
        r.audit(codes.GOVERNANCE_ALLOWED, step=command.step, attempt=command.attempt, target=target,
                detail={"iteration": command.iteration})
        view.running[command.agent] += 1
        view.dispatched[command.agent] += 1
        view.reserve(run_id=r.run.pk, workflow=workflow, dispatch=command, amount=estimated)
        self._start(command, spec, agent, route)

    def _running(self, name: str) -> int:
        """The agent's steps running now, for its max_concurrency: other runs' rows, this run's steps still
        running in its interpreter (a step that finished earlier in this round is not written yet, so its
        row still says running), and this round's dispatches."""
        agent = self.view.agent(name)
        if agent is None or agent.max_concurrency is None:
            return 0
        rows = self._running_rows.get(name)
        if rows is None:  # read once a round, after the ledger locked the agent: no other round adds one
            rows = self._running_rows[name] = list(StepRow.objects.filter(
                agent=name, status=StepStatus.RUNNING).values_list("run_id", "step", "attempt", "iteration"))
        run_id, steps = self.effects.run.pk, self.state.steps
        count = 0
        for row_run, step, attempt, iteration in rows:
            if row_run != run_id:
                count += 1
            elif (st := steps.get(step)) is not None and st.status == StepStatus.RUNNING \
                    and (st.attempt, st.iteration) == (attempt, iteration):
                count += 1
        return count + self.view.running[name]

    def _start(self, command: cmd.Dispatch, spec, agent, route=None) -> None:
        r = self.effects
        fence = r.next_fence()
        payload = command.to_json()
        if route is not None and route.gateways:  # where the worker sends it, and fails over to (runtime.gateways)
            payload[ROUTE] = {"gateways": [g.name for g in route.gateways], "gateway": route.gateway.name}
        r.set_step(command.step, agent=agent.name, dispatch=payload,
                   deadline_at=r.now + timedelta(seconds=command.timeout_s))
        request = request_of(r.run.pk, payload, spec, None)
        if agent.provider == "mock":
            r.set_step(command.step, **leases.in_inbox(fence))
            self._mock(request, inbox.completion(command.step, command.attempt, command.iteration))
        elif agent.provider == "python" and agents.inline(agent):
            r.set_step(command.step, **leases.inline(fence, r.now))
            r.run_inline(InlineCall(r.run.pk, command.step, command.attempt, command.iteration, request, agent,
                                    fence))
        else:
            r.set_step(command.step, **leases.queued(fence, r.now))
            run_id = r.run.pk
            r.on_commit(lambda: queue.enqueue_execution(run_id, command.step, command.attempt, fence))

    def _mock(self, request: StepRequest, key: str) -> None:
        """The mock agent's result is known now; a delay or a timeout only decides when it is fed."""
        r = self.effects
        outcome = mock_agent.plan(request)
        if outcome.result is None or outcome.delay_s > request.timeout_s:
            result = StepResult.failure(f"timed out after {request.timeout_s:g} s", "timeout")
            delay = request.timeout_s
        else:
            result, delay = outcome.result, outcome.delay_s
        due = r.at + delay
        r.add_input(key, result.event(request, due), due_at=to_datetime(due) if delay else r.now)

    def record_spend(self, event: ev.StepFinished) -> None:
        """Tokens and cost of a result fed this round (a result that is never fed records its own); a budgeted
        call's reservation ends with it even when it cost nothing."""
        r = self.effects
        agent = self._agent_of(event)
        if event.tokens > 0 or event.cost > 0:
            reservations.settle(run_id=r.run.pk, workflow=self.workflow.name, agent=agent, step=event.step,
                                attempt=event.attempt, iteration=event.iteration, tokens=event.tokens,
                                cost=event.cost, at=r.now, input_tokens=event.input_tokens,
                                output_tokens=event.output_tokens, model=event.model or "")
        elif self.view.budgeted(self.workflow.name, agent):
            reservations.release(r.run.pk, event.step, event.attempt, event.iteration)

    def _agent_of(self, event: ev.StepFinished) -> str:
        """The agent that made the call: a review loop's fix is its fix agent's (the history entry of the call
        names it), every other call the step's."""
        st = self.state.steps.get(event.step)
        for entry in reversed(st.history if st is not None else []):
            if entry.get("attempt") == event.attempt and entry.get("iteration") == event.iteration:
                return entry.get("agent") or ""
        return self.workflow.by_id[event.step].model.agent or ""

    def release(self, command: cmd.CancelStep) -> None:
        """A cancelled or timed-out attempt stops holding budgets (a result that still arrives settles it)."""
        reservations.release(self.effects.run.pk, command.step, command.attempt)

