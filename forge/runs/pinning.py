"""Agents pinned per run (spec 15): what a run reads of each agent once, when it starts.

A run keeps, for every agent its steps can call, the agent's provider, its
configuration (model, endpoint, secrets' names), the names of its gateways in
order, its prices and the keys a step may override, in `Run.pinned`:

    {"agents": {"writer": {"provider": "openai", "config": {...}, "gateways": ["gw-a", "gw-b"],
                           "prices": [0.15, 0.6], "overridable": ["model"]}}}

An admin's change to those applies to runs started after it. Governance
settings (enabled, status, trust, requires-approval, budgets, rate limits,
concurrency, policies) stay live: the gates read the Agent row at each
dispatch (forge.governance.context), never the pin. A gateway's own row (its
url, health, capabilities) is live too: the pin keeps which gateways and in
what order.

A run pins the agents of its sub-workflows too (the referenced versions as of
its start, forge.runs.creation.reachable_agents), and a child run keeps its
parent's pins: one run, one configuration per agent, however deep. A restart
keeps its source run's pins. Either pins now only the agents its source did
not (a sub-workflow version saved since, say). A run resumed after a crash or
a hold reads its row: nothing is pinned again.

An agent that does not exist when the run starts cannot be pinned then; if
an admin creates it while the run goes on, the run pins it at its first
dispatch (`pin_at_dispatch`, in that round's transaction), from the row the
gates read, and keeps that pin for the rest of the run (a child run started
later inherits it; one a child pins is its own). A run started before
pinning existed (`pinned` is {}) has no pins and reads its agents live.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.workflow import Workflow
from forge.governance.context import configuration, gateway_names
from forge.governance.models import Agent, model_price
from forge.runs.models import Run
from forge.runtime import store


def step_agents(workflow: Workflow) -> set[str]:
    """Every agent the workflow's steps may call: their own, and a review loop's fix agent."""
    names = set()
    for spec in workflow.steps:
        model = spec.model
        if model.agent:
            names.add(model.agent)
        fix = model.loop.on_request_changes if model.loop is not None else None
        if fix is not None and fix.fix_agent:
            names.add(fix.fix_agent)
    return names


def pin_of(agent: Agent) -> dict[str, Any]:
    """One agent's pin: plain JSON, read from its row now."""
    config = agent.config if isinstance(agent.config, dict) else {}
    gateways = list(gateway_names(agent))  # a live row's, ordered by position (AgentGateway.Meta)
    prices = model_price(config) if agent.provider == "openai" else None
    return {"provider": agent.provider, "config": config, "gateways": gateways,
            "prices": list(prices) if prices else None,
            "overridable": list(agent.overridable) if isinstance(agent.overridable, list) else []}


def pins(names: Iterable[str], inherited: dict | None = None) -> dict[str, Any]:
    """`Run.pinned` for a run whose steps can call the agents `names`: the `inherited` pins (a restart's source,
    a child's parent) kept as they are, every other agent that exists pinned from its row now. An agent that
    does not exist is not pinned now: the gates refuse its steps while it does not, and the run pins it at its
    first dispatch once it does (`pin_at_dispatch`)."""
    kept = dict((inherited or {}).get("agents") or {})
    missing = sorted(set(names) - set(kept))
    if missing:
        rows = Agent.objects.filter(name__in=missing).prefetch_related("routes__gateway")
        kept.update({agent.name: pin_of(agent) for agent in rows})
    return {"agents": kept}


class PinnedAgent:
    """An agent as one run calls it: the pinned provider, config, gateway names (in order; each gateway's own
    row is read live by forge.governance.context) and prices, and every other field (the governance settings)
    read from the live Agent row, which is None once the agent is deleted.

    `config` carries the pinned prices as `price_per_million`, so whatever prices a call from the config
    (forge.governance.models.model_price: the executor's cost, a budget's projected cost) uses the prices
    the run started with.
    """

    def __init__(self, name: str, pin: dict[str, Any], live: Agent | None):
        self.name = name
        self.provider = str(pin.get("provider") or "")
        self.pinned_config = pin.get("config") if isinstance(pin.get("config"), dict) else {}
        self.gateways = tuple(str(g) for g in pin.get("gateways") or ())
        prices = pin.get("prices")
        self.prices = tuple(prices) if isinstance(prices, list) and len(prices) == 2 else None
        self.overridable = tuple(pin.get("overridable") or ())
        self.live = live

    @property
    def config(self) -> dict[str, Any]:
        if self.prices is None:
            return self.pinned_config
        return {**self.pinned_config, "price_per_million": list(self.prices)}

    def __getattr__(self, attr: str):
        # Only reached for what the pin does not hold: the governance settings, read live.
        live = self.__dict__.get("live")
        if live is None or attr.startswith("_"):
            raise AttributeError(f"agent {self.__dict__.get('name')!r} has no live row to read {attr!r} from "
                                 f"(deleted since the run started)")
        return getattr(live, attr)

    def __repr__(self) -> str:
        return f"PinnedAgent({self.name!r}, {self.provider!r})"


_LIVE = object()


def pinned_agents(run) -> dict[str, dict]:
    """The run's pins by agent name ({} for a run from before pinning)."""
    agents = run.pinned.get("agents") if isinstance(run.pinned, dict) else None
    return agents if isinstance(agents, dict) else {}


def keeps_pins(run) -> bool:
    """Whether the run pins its agents: every run started since pinning, even one that could pin none (`{"agents":
    {}}`); one from before has `pinned` {} and reads its agents live."""
    return isinstance(run.pinned, dict) and isinstance(run.pinned.get("agents"), dict)


def pin_at_dispatch(run, name: str, live: Agent) -> PinnedAgent | Agent:
    """The agent `name` as `run` calls it at a dispatch whose gates read its `live` row: an agent the run keeps no
    pin of (it did not exist when the run started) is pinned now, from that row, and written to `Run.pinned` in
    the caller's transaction (a round, under the run's lock), so the rest of the run calls it as it is now."""
    if keeps_pins(run) and not isinstance(run.pinned["agents"].get(name), dict):
        run.pinned = {**run.pinned, "agents": {**run.pinned["agents"], name: pin_of(live)}}
        store.update(Run, {"pinned": run.pinned}, id=run.pk)
    return pinned_agent(run, name, live)


def pinned_agent(run, name: str, live: Agent | None | object = _LIVE) -> PinnedAgent | Agent | None:
    """The agent `name` as `run` calls it: a PinnedAgent when the run pinned it, else the live row (a run from
    before pinning, or an agent not dispatched since it was created, which `pin_at_dispatch` pins at its first
    dispatch), or None when there is neither. `live` is the Agent row the caller already holds (the
    dispatch's governance snapshot); by default this process's snapshot is read.

    An agent deleted after the run started keeps its pin: an attempt dispatched before the deletion still
    runs with the pinned configuration. New dispatches of it are refused by the gates, which read it live.
    """
    if live is _LIVE:
        live = configuration().agents.get(name)
    pin = pinned_agents(run).get(name)
    if not isinstance(pin, dict):
        return live
    return PinnedAgent(name, pin, live)
