"""Input fields that take exactly one JSON type and bound it (DRF's own would turn "true" into True, 1.0 into 1 and
1e400 into infinity), a redacted value sent back put back as stored, and the turn of a model's ValidationError into
the API's problem."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import serializers

from engine.secrets import redact_secrets
from forge.errors import Invalid
from forge.governance.validators import kept_json

MAX_FLOAT = 1e15  # a budget, a cost: far above any real one, far below where a float loses whole units


class Words(serializers.CharField):
    """A JSON string, trimmed as the admin's forms trim it; NUL and unpaired surrogates refused (DRF's own)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class Flag(serializers.BooleanField):
    """true or false, nothing else ("true", 1 and "on" are refused)."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=str(data)[:20])
        return data


class Whole(serializers.IntegerField):
    """A JSON integer: not a string of digits, not 3.0, not true."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class Number(serializers.FloatField):
    """A finite JSON number within ±MAX_FLOAT, unless bounded tighter."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", -MAX_FLOAT)
        kwargs.setdefault("max_value", MAX_FLOAT)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class Choice(serializers.ChoiceField):
    """One of `choices`, as a JSON string."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=str(data)[:40])
        return super().to_internal_value(data)


class KeptJson(serializers.JSONField):
    """Any JSON value both databases keep (forge/governance/validators.kept_json, as the admin's forms check)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            kept_json(value)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value


def invalid_of(exc: ValidationError, *, code: str = "invalid_fields") -> Invalid:
    """A model's ValidationError (full_clean, a service's check) as the 422 problem: `detail` names the first
    problem, `errors` holds them all by field (`non_field_errors` for the whole row)."""
    if hasattr(exc, "error_dict"):
        errors = {("non_field_errors" if name == "__all__" else name): list(messages)
                  for name, messages in exc.message_dict.items()}
    else:
        errors = {"non_field_errors": list(exc.messages)}
    field, messages = next(iter(errors.items()))
    where = "" if field == "non_field_errors" else f"{field}: "
    count = sum(len(each) for each in errors.values())
    more = f" (and {count - 1} more)" if count > 1 else ""
    return Invalid(f"{where}{messages[0]}{more}", code=code, errors=errors)


def restore_redacted(sent: Any, stored: Any) -> Any:
    """`sent` with every part that equals the answer's redacted form of `stored` put back to the stored value:
    a configuration read and sent back unchanged keeps its secrets rather than storing "[redacted]"."""
    return _restore(sent, stored, redact_secrets(stored))


def _restore(sent: Any, stored: Any, shown: Any) -> Any:
    if sent == shown and shown != stored:
        return stored
    if isinstance(sent, dict) and isinstance(stored, dict) and isinstance(shown, dict):
        return {key: _restore(value, stored[key], shown[key]) if key in stored else value
                for key, value in sent.items()}
    if isinstance(sent, list) and isinstance(stored, list) and isinstance(shown, list):
        return [_restore(value, stored[i], shown[i]) if i < len(stored) else value for i, value in enumerate(sent)]
    return sent
