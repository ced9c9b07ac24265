"""Which gateway takes a step (spec 15, seed 000's routing): the first healthy one covering its capabilities.

An agent names its gateways in order of preference. Those whose
capabilities include every capability the step requires cover it; the
first healthy one of them is picked, and the others covering it are where
a dispatch that cannot connect goes next (healthy ones first, in order).
None covering the step: `capability_missing`, which waiting cannot cure.
All covering ones unhealthy: `gateway_unreachable`, which may clear. An
agent without gateways is checked against its own `capabilities` setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GatewayInfo:
    """One of the agent's gateways, as measured now.

    Args:
        name: the gateway's name.
        healthy: whether its last probe or dispatch reached it (spec 15: measured, not declared).
        min_trust_level: the lowest agent trust level it accepts.
        capabilities: what it can run.
    """

    name: str
    healthy: bool
    min_trust_level: int = 0
    capabilities: tuple[str, ...] = ()


CAPABILITY_MISSING = "capability_missing"
GATEWAY_UNREACHABLE = "gateway_unreachable"


@dataclass(frozen=True, slots=True)
class Route:
    """Where a dispatch goes.

    Args:
        gateway: the gateway picked (None: none, or the agent has no gateways).
        gateways: the covering gateways in the order a dispatch tries them: healthy ones first, each group in
            the agent's order.
        code: None when the step may go; `capability_missing` or `gateway_unreachable` when it may not.
        reason: why, as a sentence for people.
    """

    gateway: GatewayInfo | None
    gateways: tuple[GatewayInfo, ...] = ()
    code: str | None = None
    reason: str = ""

    def to_json(self) -> dict:
        """The route as the governance event keeps it: names tried in order, the one picked, why."""
        return {"gateways": [g.name for g in self.gateways], "gateway": self.gateway.name if self.gateway else None,
                "reason": self.reason}


def _missing(needed: Sequence[str], have: Iterable[str]) -> list[str]:
    have = set(have)
    return [name for name in needed if name not in have]


def _names(items: Iterable[str]) -> str:
    return ", ".join(repr(item) for item in items)


def route(gateways: Sequence[GatewayInfo], capabilities: Sequence[str],
          agent_capabilities: Sequence[str] = ()) -> Route:
    """Pick the gateway for a step.

    Args:
        gateways: the agent's gateways, in its order of preference (empty: it has none).
        capabilities: what the step requires.
        agent_capabilities: what the agent itself says it can do; read only when it has no gateways.

    Returns:
        The route; its `code` says why the step may not go.
    """
    needed = list(dict.fromkeys(capabilities))
    if not gateways:
        missing = _missing(needed, agent_capabilities)
        if missing:
            return Route(None, (), CAPABILITY_MISSING,
                         f"the agent has no gateway and does not have the capabilities {_names(missing)} "
                         f"the step requires")
        return Route(None, (), None, "the agent has no gateway: its own settings say where the step goes")
    covering = [g for g in gateways if not _missing(needed, g.capabilities)]
    if not covering:
        return Route(None, (), CAPABILITY_MISSING,
                     f"none of the agent's gateways ({_names(g.name for g in gateways)}) has every capability "
                     f"the step requires ({_names(needed)})")
    ordered = tuple([g for g in covering if g.healthy] + [g for g in covering if not g.healthy])
    picked = ordered[0]
    if not picked.healthy:
        return Route(None, ordered, GATEWAY_UNREACHABLE,
                     f"every gateway that covers the step ({_names(g.name for g in covering)}) is unhealthy")
    passed = []
    for gateway in gateways:
        if gateway is picked:
            break
        lacking = _missing(needed, gateway.capabilities)
        passed.append(f"{gateway.name!r} ({'lacks ' + _names(lacking) if lacking else 'unhealthy'})")
    why = f"gateway {picked.name!r} is the agent's first healthy gateway"
    if needed:
        why += f" with the capabilities {_names(needed)}"
    if passed:
        why += f"; passed over: {', '.join(passed)}"
    return Route(picked, ordered, None, why)
