"""One filter grammar for every list (the console's pages, the API, the CLI): each kind of value checked,
bounded and typed, or a problem in words naming the filter, never a guess or a database error
(docs/design/api.md, section 3).

Numbers are ASCII digits within 64 bits (str.isdigit also takes '²', which int() refuses, and '٣', which it
reads as 3); dates are YYYY-MM-DD in ASCII digits, or a moment YYYY-MM-DDTHH:MM[:SS[.ffffff]] in UTC unless it
names its zone (Z or ±HH:MM); months are YYYY-MM; texts are at most as long as the column they are compared with.
Control characters never get here (forge/request_guard.py).

Each kind is a form field whose problems leave the filter's name out ("must be one of a, b"): the FilterSet (or
the console's `Filters`) says it in front, so a problem reads "status must be one of a, b" wherever it is shown.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError

from forge.errors import BadRequest

MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_MOMENT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?"
                     r"(Z|[+-][0-9]{2}:[0-9]{2})?")


class KindField(forms.Field):
    """A filter's value: "" (or absent) is `empty`, anything else goes through `parse`."""

    kind = ""
    empty: Any = None

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)  # a filter not given filters nothing
        super().__init__(**kwargs)

    def takes(self) -> dict[str, Any]:
        """The kind's bounds, as the tests that walk every filter read them."""
        return {}

    def to_python(self, value):
        raw = "" if value is None else str(value)
        return self.parse(raw) if raw else self.empty

    def parse(self, raw: str):
        raise NotImplementedError


class TextField(KindField):
    kind, empty = "text", ""

    def __init__(self, *, limit: int, **kwargs):
        self.limit = limit
        super().__init__(**kwargs)

    def takes(self):
        return {"limit": self.limit}

    def parse(self, raw):
        if len(raw) > self.limit:
            raise ValidationError(f"must be at most {self.limit} characters long (it has {len(raw)})")
        return raw


class OptionField(KindField):
    """One of `options` (their keys, for a dict); none given is `default`."""

    kind = "choice"

    def __init__(self, *, options, default: str = "", **kwargs):
        self.options, self.empty = tuple(options), default
        super().__init__(**kwargs)

    def takes(self):
        return {"options": self.options}

    def parse(self, raw):
        if raw not in self.options:
            raise ValidationError(f"must be one of {', '.join(self.options)}")
        return raw


class NumberField(KindField):
    kind = "number"

    def parse(self, raw):
        if not _DIGITS.fullmatch(raw) or not 1 <= int(raw) <= MAX_ID:
            raise ValidationError(f"must be a whole number from 1 to {MAX_ID}, in the digits 0-9")
        return int(raw)


class DayField(KindField):
    """The first (or, with `end`, the last) moment of the day named, in UTC; a moment named is itself."""

    kind = "day"

    def __init__(self, *, end: bool = False, **kwargs):
        self.end = end
        super().__init__(**kwargs)

    def takes(self):
        return {"end": self.end}

    def parse(self, raw):
        try:
            if _DAY.fullmatch(raw):
                return datetime.combine(date.fromisoformat(raw), time.max if self.end else time.min,
                                        tzinfo=timezone.utc)
            if not _MOMENT.fullmatch(raw):
                raise ValueError
            moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError("must be a date written YYYY-MM-DD, or a moment YYYY-MM-DDTHH:MM") from None
        try:
            return moment.replace(tzinfo=moment.tzinfo or timezone.utc).astimezone(timezone.utc)
        except OverflowError:  # 0001-01-01T00:00+01:00 is before the first moment UTC can name
            raise ValidationError("must be between 0001-01-01 and 9999-12-31 in UTC") from None


class MonthField(KindField):
    """The first moment of the month named (YYYY-MM) in UTC; with `end`, the first moment after it (None after
    9999-12: no moment comes after it, and nothing is left out)."""

    kind = "month"

    def __init__(self, *, end: bool = False, **kwargs):
        self.end = end
        super().__init__(**kwargs)

    def takes(self):
        return {"end": self.end}

    def parse(self, raw):
        match = _MONTH.fullmatch(raw)
        if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 1:
            raise ValidationError("must be a month written YYYY-MM, from 0001-01 to 9999-12")
        year, month = int(match.group(1)), int(match.group(2))
        if self.end:
            if (year, month) == (9999, 12):
                return None
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return datetime(year, month, 1, tzinfo=timezone.utc)


def problems_of(name: str, messages) -> list[str]:
    """Each of a filter's `messages` (or a ValidationError's) as a sentence naming it."""
    if isinstance(messages, ValidationError):
        messages = messages.messages
    return [f"{name} {message}" for message in messages]


# -- The filters of a FilterSet, one per kind ---------------------------------------------------------------------

class TextFilter(django_filters.Filter):
    """A text compared with a column (`lookup_expr`, exact by default): `limit` is the column's length."""

    field_class = TextField


class OptionFilter(django_filters.Filter):
    field_class = OptionField


class NumberFilter(django_filters.Filter):
    field_class = NumberField


class DayFilter(django_filters.Filter):
    """A lower bound (`lookup_expr="gte"`) or, with `end=True`, an upper one (`"lte"`), both inclusive."""

    field_class = DayField


class SortFilter(django_filters.Filter):
    """The order of the rows: `sorts` maps each name people use to the column(s), `-id` breaks ties."""

    field_class = OptionField

    def __init__(self, *, sorts: dict[str, str], default: str, **kwargs):
        self.sorts = sorts
        super().__init__(options=sorts, default=default, **kwargs)

    def filter(self, qs, value):
        return qs.order_by(self.sorts[value], "-id")


class FilterSet(django_filters.FilterSet):
    """A list's filters. `problems`: what was refused, each a sentence naming its filter (a list with a problem
    shows no rows); `values`: each filter as given (a form shows them again); `asked`: what each filter takes."""

    @property
    def problems(self) -> list[str]:
        return [problem for name, messages in self.errors.items() for problem in problems_of(name, messages)]

    @property
    def values(self) -> dict[str, str]:
        return {name: "" if self.data.get(name) is None else str(self.data.get(name)) for name in self.filters}

    @property
    def asked(self) -> dict[str, dict[str, Any]]:
        return {name: {"kind": f.field.kind, **f.field.takes()} for name, f in self.filters.items()}

    def cleaned(self, name: str):
        """`name`'s value as the rows were filtered by it: its empty value (or default) when it was refused."""
        self.errors  # validates the form, which fills cleaned_data
        return self.form.cleaned_data.get(name, self.form.fields[name].empty)


def filtered(filterset_class: type[FilterSet], data, queryset):
    """`queryset` filtered by `data` (a query string's values), or BadRequest naming each filter refused (its
    `errors`: each filter's sentences)."""
    given = filterset_class(data, queryset=queryset)
    if given.errors:
        raise BadRequest("; ".join(given.problems), code="bad_filter",
                         errors={name: problems_of(name, messages) for name, messages in given.errors.items()})
    return given.qs
