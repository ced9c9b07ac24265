"""What the console's pages that list no model's rows (the run's log, the Spend page) read from their query string,
through the same kinds of value as every FilterSet (forge/filters.py): each filter checked, bounded and typed, or a
problem in words the page shows (with a 400 and no rows) rather than a guess or a database error."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError

from forge.filters import MAX_ID, DayField, KindField, MonthField, NumberField, OptionField, TextField, problems_of

__all__ = ["MAX_ID", "Filters"]


class Filters:
    """One page's filters: `values` as typed (the form shows them again), `problems` for what was refused, and
    `asked`, what each filter takes (its kind and bounds; the tests walk every filter of every page by it)."""

    def __init__(self, query):
        self.query = query
        self.values: dict[str, str] = {}
        self.problems: list[str] = []
        self.asked: dict[str, dict[str, Any]] = {}

    def _take(self, name: str, field: KindField):
        self.asked[name] = {"kind": field.kind, **field.takes()}
        self.values[name] = self.query.get(name, "")
        try:
            return field.clean(self.values[name])
        except ValidationError as refused:
            self.problems.extend(problems_of(name, refused))
            return field.empty

    def text(self, name: str, *, limit: int) -> str:
        return self._take(name, TextField(limit=limit))

    def choice(self, name: str, options, *, default: str = "") -> str:
        return self._take(name, OptionField(options=options, default=default))

    def number(self, name: str) -> int | None:
        return self._take(name, NumberField())

    def day(self, name: str, *, end: bool = False) -> datetime | None:
        return self._take(name, DayField(end=end))

    def month(self, name: str, *, end: bool = False) -> datetime | None:
        return self._take(name, MonthField(end=end))
