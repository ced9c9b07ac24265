"""A step's `agent_config` against what its agent allows (spec 15), checked when a run starts: the agents are
pinned from then on, so what the run may override is known, and a refusal then changes nothing.

Each key a step sets must be among its agent's `overridable` keys, and `max_tokens` never above the agent's own
`max_tokens` (an agent without one sets no bound). An agent the run did not pin (it does not exist) is not
checked here: its steps are refused at dispatch, as every gate reads it live.
"""

from __future__ import annotations

from typing import Any

from engine.model import AgentConfig
from engine.workflow import Workflow

CODE = "agent_config_refused"
KEYS = tuple(AgentConfig.model_fields)  # model, reasoning_effort, temperature, max_tokens


def overridable_problem(value: Any) -> str | None:
    """Why an agent's `overridable` setting is refused, or None: a list of distinct keys of agent_config."""
    if not isinstance(value, list):
        return f"must be a list of agent_config keys ({', '.join(KEYS)})"
    unknown = [str(key)[:40] for key in value if key not in KEYS]
    if unknown:
        return f"{unknown[0]!r} is not an agent_config key; the keys are {', '.join(KEYS)}"
    if len(set(value)) != len(value):
        return "names a key twice"
    return None


def agent_config_problems(workflow: Workflow, pinned: dict[str, Any]) -> list[str]:
    """What each step's `agent_config` sets that its agent, as `pinned` (Run.pinned), does not allow."""
    agents = pinned.get("agents") or {}
    problems = []
    for spec in workflow.steps:
        overlay = spec.model.agent_config
        pin = agents.get(spec.model.agent or "")
        if overlay is None or not isinstance(pin, dict):
            continue
        problems += overlay_problems(spec.id, spec.model.agent, pin.get("overridable"), pin.get("config"),
                                     overlay.model_dump(exclude_none=True))
    return problems


def overlay_problems(step: str, name: str, overridable: Any, config: Any, overlay: dict[str, Any]) -> list[str]:
    """What `overlay` (a step's agent_config, its keys set) asks that agent `name`, with these `overridable` keys
    and `config`, does not allow."""
    allowed = [key for key in overridable if key in KEYS] if isinstance(overridable, (list, tuple)) else []
    problems = []
    for key, value in overlay.items():
        if key not in allowed:
            allows = f"it allows {', '.join(allowed)}" if allowed else "it allows none"
            problems.append(f"step {step!r} sets agent_config.{key}, which agent {name!r} does not let a "
                            f"step override ({allows})")
        elif key == "max_tokens":
            own = config.get("max_tokens") if isinstance(config, dict) else None
            if type(own) is int and value > own:
                problems.append(f"step {step!r} sets agent_config.max_tokens to {value}, above agent "
                                f"{name!r}'s max_tokens ({own})")
    return problems


def refusal(workflow: Workflow, pinned: dict[str, Any]) -> str | None:
    """The refusal's message (None: every overlay is allowed); the first problems, and how many more."""
    problems = agent_config_problems(workflow, pinned)
    if not problems:
        return None
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return f"{CODE}: {shown}"
