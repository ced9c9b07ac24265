"""The engine's times (seconds since the epoch, as its events carry them) as the rows' datetimes."""

from __future__ import annotations

from datetime import datetime, timezone


def to_datetime(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)
