"""Plain-data messages (events in, commands out) and their JSON form.

Messages are treated as immutable values; they are not frozen dataclasses only
because frozen construction costs several times more on the hot path.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any


class Message:
    """Base of events and commands: frozen dataclasses that round-trip through JSON."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        data = {"type": type(self).__name__}
        for name in field_names(type(self)):
            data[name] = getattr(self, name)
        return data


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """A message class's field names, in order (dataclasses.fields is slow enough to matter per event)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def registry(*classes: type) -> dict[str, type]:
    return {cls.__name__: cls for cls in classes}


def from_json(data: dict[str, Any], known: dict[str, type]) -> Message:
    """Rebuild a message; unknown types or fields are an error."""
    if not isinstance(data, dict) or data.get("type") not in known:
        raise ValueError(f"unknown message {data.get('type') if isinstance(data, dict) else data!r}")
    cls = known[data["type"]]
    fields = {k: v for k, v in data.items() if k != "type"}
    unknown = set(fields) - set(field_names(cls))
    if unknown:
        raise ValueError(f"{data['type']} has no field(s) {sorted(unknown)}")
    return cls(**fields)
