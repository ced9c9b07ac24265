"""Checks every editor of governance configuration applies beyond the models' own `clean` (the admin's forms and
the API's bodies): JSON the database keeps, and an agent's overridable keys in agent_config's order."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from engine.executors.gateway_result import outputs_problem
from forge.runs import agent_config


def kept_json(value: Any) -> None:
    """Raise ValidationError unless both databases keep `value` as it is: no NaN or Infinity, no NUL or unpaired
    surrogate, no integer beyond 64 bits, nested and sized within the bounds of a step's outputs."""
    if problem := outputs_problem({"value": value}):
        raise ValidationError(f"this JSON cannot be stored: its values {problem}")


def overridable_in_order(keys: Any) -> Any:
    """`keys` in agent_config's order whatever order they were given in; a value the model refuses (not a list,
    an unknown key, a key twice) is left as it is, for Agent.clean to say why."""
    if agent_config.overridable_problem(keys) is not None:
        return keys
    return [key for key in agent_config.KEYS if key in keys]
