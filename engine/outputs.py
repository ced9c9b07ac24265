"""Agent outputs (spec section 7): coercion, then validation against the step's schema.

Success criteria and input passthrough need the run's scope, so the
interpreter applies them after these two pure stages.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import regex

from engine.expressions.nodes import equals, is_number, prefix_match
from engine.model import OutputSchema

_NUMERIC = re.compile(r"^\s*[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*$")
_TRUE = frozenset({"true", "yes"})
_FALSE = frozenset({"false", "no"})
_BOOLEAN_KEYS = ("result", "value", "verified", "passed", "status")
_TYPE_CHECKS = {
    "string": lambda v: type(v) is str,
    "number": is_number,
    "integer": lambda v: type(v) is int,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
PATTERN_TIMEOUT_S = 0.05


def round_half_away(value: float) -> int:
    """Round to the nearest integer, halves away from zero (2.5 -> 3, -2.5 -> -3)."""
    whole = math.trunc(value)
    # value - whole is exact for floats, unlike abs(value) + 0.5 (0.49999999999999994 + 0.5 == 1.0)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return whole


def coerce(value: Any, type_name: str | None) -> Any:
    """Coerce one value toward a declared type; a value that cannot be coerced is returned unchanged."""
    if type_name is None or value is None:
        return value
    if type_name == "string":
        if isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False)
        if type(value) is bool:
            return "true" if value else "false"
        if is_number(value):
            return json.dumps(value)
        return value
    if type_name in ("number", "integer"):
        number = value
        if type(value) is str and _NUMERIC.match(value):
            text = value.strip()
            try:
                number = int(text) if re.fullmatch(r"[-+]?[0-9]+", text) else float(text)
            except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits): left as text
                return value
        if type_name == "integer" and type(number) is float and math.isfinite(number):
            return round_half_away(number)
        return number
    if type_name == "boolean":
        if type(value) is str:
            lowered = value.strip().lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            return value
        if isinstance(value, dict):
            for key in _BOOLEAN_KEYS:
                if key in value:
                    inner = coerce(value[key], "boolean")
                    return inner if type(inner) is bool else value
        return value
    if type_name == "array":
        return value if isinstance(value, list) else [value]
    return value


def coerce_outputs(outputs: Mapping[str, Any], schema: Mapping[str, OutputSchema]) -> dict[str, Any]:
    """Coerce every declared field present in `outputs`; undeclared fields are kept as they are."""
    result = dict(outputs)
    for name, field in schema.items():
        if name in result and field.type is not None:
            result[name] = coerce(result[name], field.type)
    return result


def validate_outputs(outputs: Mapping[str, Any], schema: Mapping[str, OutputSchema]) -> str | None:
    """Check coerced outputs against the schema; the first problem as a sentence, or None."""
    for name, field in schema.items():
        if name not in outputs or outputs[name] is None:
            if field.required:
                return f"output {name!r} is required but missing"
            continue
        problem = check_value(outputs[name], field)
        if problem:
            return f"output {name!r} {problem}"
    return None


def check_value(value: Any, field: OutputSchema) -> str | None:
    """One value against one field schema: type, enum, bounds, length, pattern, items."""
    if field.type is not None and not _TYPE_CHECKS[field.type](value):
        return f"must be {_article(field.type)}, got {_show(value)}"
    if field.enum is not None and not any(
            prefix_match(value, option) if type(option) is str else equals(value, option) for option in field.enum):
        return f"must be one of {field.enum}, got {_show(value)}"
    if is_number(value):
        if field.minimum is not None and value < field.minimum:
            return f"must be at least {_num(field.minimum)}, got {_show(value)}"
        if field.maximum is not None and value > field.maximum:
            return f"must be at most {_num(field.maximum)}, got {_show(value)}"
    if type(value) is str:
        if field.minLength is not None and len(value) < field.minLength:
            return f"must be at least {field.minLength} characters long"
        if field.maxLength is not None and len(value) > field.maxLength:
            return f"must be at most {field.maxLength} characters long"
        if field.pattern is not None:
            try:
                found = regex.search(field.pattern, value, timeout=PATTERN_TIMEOUT_S)
            except TimeoutError:
                return f"could not be matched against {field.pattern!r} in time"
            if found is None:
                return f"must match {field.pattern!r}, got {_show(value)}"
    if isinstance(value, list) and field.items is not None:
        check = _TYPE_CHECKS[field.items.type]
        for position, item in enumerate(value):
            if not check(item):
                return f"item {position} must be {_article(field.items.type)}, got {_show(item)}"
    return None


def default_value(type_name: str | None) -> Any:
    """The mock agent's value for a declared output: "", 0, false, [] or {} by type."""
    return {"string": "", "number": 0, "integer": 0, "boolean": False, "array": [], "object": {}}.get(
        type_name or "string", "")


def _article(type_name: str) -> str:
    return {"integer": "an integer", "array": "an array", "object": "an object"}.get(type_name, f"a {type_name}")


def _num(value: float) -> str:
    return json.dumps(int(value) if float(value).is_integer() else value)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
