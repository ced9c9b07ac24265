"""Loaded values compared and copied as a patch means them."""

from __future__ import annotations

import math
from typing import Any


def plain_copy(value: Any) -> Any:
    """A deep copy that shares nothing: loaded aliases share one object, a patched copy must not."""
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


def json_safe(value: Any) -> Any:
    """A loaded value as strict JSON holds it: NaN and the infinities (YAML's .nan, .inf) as their YAML text,
    which JSON.parse would refuse; keys as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """Equal as loaded values: `1`, `1.0` and `true` differ (Python's == says they are equal), NaN equals NaN
    (key order aside: a new key may go anywhere)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b
