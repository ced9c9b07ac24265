"""What the console's list pages read from their query string: each filter checked, bounded and typed, or a
problem in words the page shows (with a 400 and no rows) rather than a guess or a database error.

Numbers are ASCII digits within 64 bits (str.isdigit also takes '²', which int() refuses, and '٣', which it
reads as 3); dates are YYYY-MM-DD in ASCII digits, or a moment YYYY-MM-DDTHH:MM[:SS[.ffffff]] in UTC unless it
names its zone (Z or ±HH:MM); months are YYYY-MM; texts are at most as long as the column they are compared with. Control
characters never get here (forge/request_guard.py).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Any

MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_MOMENT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?"
                     r"(Z|[+-][0-9]{2}:[0-9]{2})?")


class Filters:
    """One page's filters: `values` as typed (the form shows them again), `problems` for what was refused, and
    `asked`, what each filter takes (its kind and bounds; the tests walk every filter of every page by it)."""

    def __init__(self, query):
        self.query = query
        self.values: dict[str, str] = {}
        self.problems: list[str] = []
        self.asked: dict[str, dict[str, Any]] = {}

    def _raw(self, name: str, kind: str, **takes) -> str:
        self.asked[name] = {"kind": kind, **takes}
        self.values[name] = self.query.get(name, "")
        return self.values[name]

    def text(self, name: str, *, limit: int) -> str:
        raw = self._raw(name, "text", limit=limit)
        if len(raw) > limit:
            self.problems.append(f"{name} must be at most {limit} characters long (it has {len(raw)})")
            return ""
        return raw

    def choice(self, name: str, options, *, default: str = "") -> str:
        raw = self._raw(name, "choice", options=tuple(options))
        if raw and raw not in options:
            self.problems.append(f"{name} must be one of {', '.join(options)}")
            return default
        return raw or default

    def number(self, name: str) -> int | None:
        raw = self._raw(name, "number")
        if not raw:
            return None
        if not _DIGITS.fullmatch(raw) or not 1 <= int(raw) <= MAX_ID:
            self.problems.append(f"{name} must be a whole number from 1 to {MAX_ID}, in the digits 0-9")
            return None
        return int(raw)

    def day(self, name: str, *, end: bool = False) -> datetime | None:
        """The first (or, with `end`, the last) moment of the day named, in UTC; a moment named is itself."""
        raw = self._raw(name, "day", end=end)
        if not raw:
            return None
        try:
            if _DAY.fullmatch(raw):
                return datetime.combine(date.fromisoformat(raw), time.max if end else time.min, tzinfo=timezone.utc)
            if not _MOMENT.fullmatch(raw):
                raise ValueError
            moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            self.problems.append(f"{name} must be a date written YYYY-MM-DD, or a moment YYYY-MM-DDTHH:MM")
            return None
        try:
            return moment.replace(tzinfo=moment.tzinfo or timezone.utc).astimezone(timezone.utc)
        except OverflowError:  # 0001-01-01T00:00+01:00 is before the first moment UTC can name
            self.problems.append(f"{name} must be between 0001-01-01 and 9999-12-31 in UTC")
            return None

    def month(self, name: str, *, end: bool = False) -> datetime | None:
        """The first moment of the month named (YYYY-MM) in UTC; with `end`, the first moment after it (None after
        9999-12: no moment comes after it, and nothing is left out)."""
        raw = self._raw(name, "month", end=end)
        if not raw:
            return None
        match = _MONTH.fullmatch(raw)
        if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 1:
            self.problems.append(f"{name} must be a month written YYYY-MM, from 0001-01 to 9999-12")
            return None
        year, month = int(match.group(1)), int(match.group(2))
        if end:
            if (year, month) == (9999, 12):
                return None
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return datetime(year, month, 1, tzinfo=timezone.utc)
