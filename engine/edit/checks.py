"""What a patch must hold to: ids, JSON values, paths, a list of steps."""

from __future__ import annotations

import math
from typing import Any

from engine.edit.errors import PatchError
from engine.edit.source import Source
from engine.validation import STEP_ID

MAX_PATH = 16
MAX_VALUE_NODES = 10_000
MAX_VALUE_DEPTH = 32


def check_id(value: Any, what: str = "a step id") -> str:
    if not isinstance(value, str) or not STEP_ID.fullmatch(value) or value == "loop":
        raise PatchError("bad_id", f"{what} must match [a-z][a-z0-9_]{{0,63}} (and not be `loop`), not {value!r}")
    return value


def check_value(value: Any) -> Any:
    """A JSON value of bounded size; NaN and infinities are refused (JSON has none)."""
    count = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_VALUE_NODES or depth > MAX_VALUE_DEPTH:
            raise PatchError("bad_value", "the value is too large or too deep")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise PatchError("bad_value", "mapping keys must be strings")
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise PatchError("bad_value", "a number must be finite")
        elif isinstance(item, str):
            if "\x00" in item:
                raise PatchError("bad_value", "a NUL character cannot be written")
        elif item is not None and not isinstance(item, (bool, int)):
            raise PatchError("bad_value", f"{type(item).__name__} is not a JSON value")
    return value


def check_path(path: Any) -> list:
    if not isinstance(path, list) or not path or len(path) > MAX_PATH:
        raise PatchError("bad_path", f"a path is a list of 1 to {MAX_PATH} keys and indexes")
    for part in path:
        if isinstance(part, bool) or not isinstance(part, (str, int)) or (isinstance(part, int) and part < 0):
            raise PatchError("bad_path", f"{part!r} is not a key or an index")
    return path


def steps_required(source: Source) -> None:
    if source.steps_node is None or source.steps_node.kind != "seq":
        raise PatchError("unknown_step", "the document has no list of steps")
