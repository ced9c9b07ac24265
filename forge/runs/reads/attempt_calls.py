"""What each attempt of a step used and spent, read from the run's events: the gateway that took it and why (the
`governance` event's `route`), each contact with a gateway (`gateway` events: answered, accepted, unreachable,
retry, cancel_sent, cancel_failed), and the model that answered with its tokens and cost (the attempt's
`StepFinished`, whose model and token split older runs do not have). And what the step used of the agent as the
run pinned it when it started, with the step's own `agent_config` overlay."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.secrets import redact_secrets
from forge.runs.models import Run, RunEvent

# What a gateway contact's outcome reads as.
OUTCOMES = {
    "answered": "answered", "accepted": "accepted the step (202), to call back", "unreachable": "could not be reached",
    "retry": "to be tried again", "cancel_sent": "told of the cancel", "cancel_failed": "could not be told of the cancel",
}


@dataclass(frozen=True)
class Contact:
    gateway: str
    outcome: str  # as the gateway event says it
    reason: str
    iteration: int

    @property
    def says(self) -> str:
        return OUTCOMES.get(self.outcome, self.outcome)

    @property
    def note(self) -> str:
        """Its reason, unless it only repeats the outcome ("answered: answered")."""
        return "" if self.reason.strip().lower() in (self.outcome, self.says) else self.reason

    @property
    def failed(self) -> bool:
        return self.outcome in ("unreachable", "cancel_failed")


@dataclass
class AttemptCall:
    """One attempt's route, gateway contacts, and what it spent (summed over a loop step's calls)."""

    number: int
    tried: list[str] = field(default_factory=list)  # the covering gateways, in the order they were tried
    gateway: str | None = None  # the one picked (None: none could take it)
    reason: str = ""  # why that one, or why none
    routed: bool = False  # a route was decided (an agent with gateways)
    contacts: list[Contact] = field(default_factory=list)
    models: list[str] = field(default_factory=list)  # the models that answered, in order, each once
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    cost: float = 0.0
    finished: int = 0  # results received (a loop step has one a call)

    @property
    def taken_by(self) -> str:
        """The gateway that answered the attempt or accepted it (202): after a failover, not the one routed to."""
        took = [c.gateway for c in self.contacts if c.outcome in ("answered", "accepted")]
        return took[-1] if took else ""

    @property
    def model(self) -> str:
        return ", ".join(self.models)

    @property
    def spent(self) -> bool:
        """Its results said something of what they spent (a mock's say nothing)."""
        return bool(self.models or self.tokens or self.cost)

    @property
    def shown(self) -> bool:
        return self.routed or bool(self.contacts) or self.spent

    @property
    def split(self) -> bool:
        """The agent reported how its tokens divide between input and output."""
        return bool(self.input_tokens or self.output_tokens)


@dataclass(frozen=True)
class PinnedAgent:
    """The agent as the run pinned it (forge/runs/pinning.py), and the step's overlay of it."""

    name: str
    provider: str
    model: str  # the agent's own model ("" when its config names none)
    gateways: list[str]
    prices: list | None  # per million tokens: [input, output]
    overridable: list[str]
    overlay: dict[str, Any]  # the step's agent_config
    config: dict[str, Any]  # as shown: what reads as a secret redacted

    @property
    def model_used(self) -> str:
        return str(self.overlay.get("model") or self.model)

    @property
    def config_text(self) -> str:
        return json.dumps(self.config, ensure_ascii=False, indent=2, sort_keys=True) if self.config else ""


def positive_int(value: Any) -> int:
    """A count or number an event recorded, or 0 when it is missing, not a whole number, or not above zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _attempt(calls: dict[int, AttemptCall], data: dict[str, Any]) -> AttemptCall | None:
    number = data.get("attempt")
    if not isinstance(number, int) or isinstance(number, bool):
        return None
    return calls.setdefault(number, AttemptCall(number))


def attempt_calls(run: Run, step: str) -> list[AttemptCall]:
    """Each attempt that was routed, contacted a gateway or reported a result, in attempt order."""
    calls: dict[int, AttemptCall] = {}
    events = (RunEvent.objects.filter(run=run, step=step, kind__in=("governance", "gateway", "input"))
              .order_by("id").values_list("kind", "data"))
    for kind, data in events.iterator():
        if not isinstance(data, dict):
            continue
        if kind == "governance":
            route = data.get("route")
            if isinstance(route, dict) and (call := _attempt(calls, data)) is not None:
                tried = route.get("gateways")
                call.tried = [str(g) for g in tried] if isinstance(tried, list) else []
                call.gateway = str(route["gateway"]) if route.get("gateway") else None
                call.reason, call.routed = str(route.get("reason") or ""), True
        elif kind == "gateway":
            if (call := _attempt(calls, data)) is not None:
                call.contacts.append(Contact(str(data.get("gateway") or ""), str(data.get("outcome") or ""),
                                             str(data.get("reason") or ""), positive_int(data.get("iteration"))))
        elif data.get("type") == "StepFinished" and (call := _attempt(calls, data)) is not None:
            # Read with .get: results recorded before the model and the token split were kept have neither.
            model = data.get("model")
            if isinstance(model, str) and model and model not in call.models:
                call.models.append(model)
            call.input_tokens += positive_int(data.get("input_tokens"))
            call.output_tokens += positive_int(data.get("output_tokens"))
            call.tokens += positive_int(data.get("tokens"))
            cost = data.get("cost")
            call.cost += cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0
            call.finished += 1
    return [calls[n] for n in sorted(calls) if calls[n].shown]


def pinned_agent(run: Run, agent: str, overlay: dict[str, Any]) -> PinnedAgent | None:
    """The step's agent as the run pinned it; None for a run started before agents were pinned, or an agent the
    run did not pin (a mock, a step with no agent)."""
    agents = (run.pinned or {}).get("agents") if isinstance(run.pinned, dict) else None
    pin = agents.get(agent) if isinstance(agents, dict) and agent else None
    if not isinstance(pin, dict):
        return None
    config = pin.get("config") if isinstance(pin.get("config"), dict) else {}
    gateways = pin.get("gateways") if isinstance(pin.get("gateways"), list) else []
    prices = pin.get("prices") if isinstance(pin.get("prices"), list) else None
    overridable = pin.get("overridable") if isinstance(pin.get("overridable"), list) else []
    model = config.get("model")
    return PinnedAgent(name=agent, provider=str(pin.get("provider") or ""),
                       model=model if isinstance(model, str) else "", gateways=[str(g) for g in gateways],
                       prices=prices, overridable=[str(k) for k in overridable], overlay=dict(overlay),
                       config=redact_secrets(config))
