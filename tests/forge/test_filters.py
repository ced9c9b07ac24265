"""The kinds of value every list's filters take (forge/filters.py): each valid value read as meant, the bounds,
and each garbled or hostile value refused in a sentence naming the filter, through `filtered` as the API calls it
(where the console shows the same sentence on its page)."""

from datetime import datetime, timezone

import pytest
from django.core.exceptions import ValidationError

from forge.errors import BadRequest, problem_of
from forge.filters import MAX_ID, DayField, MonthField, NumberField, OptionField, TextField, filtered
from forge.runs.filters import RunFilter
from forge.runs.models import Run

UTC = timezone.utc


@pytest.mark.parametrize("raw, since, until", [
    ("2024-02-29", datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)),
    ("0001-01-01", datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1, 23, 59, 59, 999999, tzinfo=UTC)),
    ("9999-12-31", datetime(9999, 12, 31, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("2024-01-01T10:00", datetime(2024, 1, 1, 10, tzinfo=UTC), datetime(2024, 1, 1, 10, tzinfo=UTC)),
    ("2024-01-01T10:00:05.25Z", datetime(2024, 1, 1, 10, 0, 5, 250000, tzinfo=UTC),
     datetime(2024, 1, 1, 10, 0, 5, 250000, tzinfo=UTC)),
    ("2024-01-01T10:00+05:30", datetime(2024, 1, 1, 4, 30, tzinfo=UTC), datetime(2024, 1, 1, 4, 30, tzinfo=UTC)),
])
def test_a_day_is_its_first_or_last_moment_in_utc_and_a_moment_is_itself(raw, since, until):
    assert DayField().clean(raw) == since
    assert DayField(end=True).clean(raw) == until


@pytest.mark.parametrize("field, raw, empty", [
    (TextField(limit=3), "", ""), (OptionField(options=("a",), default="a"), "", "a"), (NumberField(), "", None),
    (DayField(), "", None), (MonthField(), "", None), (TextField(limit=3), None, ""),
])
def test_an_empty_or_absent_value_is_no_filter(field, raw, empty):
    assert field.clean(raw) == empty


def test_the_bounds_are_taken():
    assert TextField(limit=3).clean("a%_") == "a%_"
    assert NumberField().clean("1") == 1 and NumberField().clean(str(MAX_ID)) == MAX_ID
    assert MonthField(end=True).clean("2026-12") == datetime(2027, 1, 1, tzinfo=UTC)
    assert MonthField(end=True).clean("9999-12") is None  # nothing comes after it, nothing is left out


@pytest.mark.parametrize("query, says", [
    ({"status": "<script>"}, "status must be one of pending, running, completed, failed, cancelled"),
    ({"workflow": "w" * 129}, "workflow must be at most 128 characters long (it has 129)"),
    ({"since": "٢٠٢٤-٠١-٠١"}, "since must be a date written YYYY-MM-DD, or a moment YYYY-MM-DDTHH:MM"),
    ({"until": "2024-01-01T10:00:00.1234567"}, "until must be a date written YYYY-MM-DD"),
    ({"since": "0001-01-01T00:00+01:00"}, "since must be between 0001-01-01 and 9999-12-31 in UTC"),
    ({"sort": "password"}, "sort must be one of id, -id, workflow, -workflow, status, -status, created, -created"),
])
def test_filtered_refuses_a_bad_value_as_a_bad_request_naming_the_filter(db, query, says):
    with pytest.raises(BadRequest) as refused:
        filtered(RunFilter, query, Run.objects.all())
    name = next(iter(query))
    assert refused.value.message.startswith(says)
    assert list(refused.value.extra["errors"]) == [name] and refused.value.extra["errors"][name][0].startswith(says)
    status, body = problem_of(refused.value)
    assert (status, body["type"], body["code"]) == (400, "https://forge.invalid/problems/bad-request", "bad_filter")
    assert body["detail"].startswith(says)


def test_filtered_names_every_filter_refused_in_the_order_of_the_list(db):
    with pytest.raises(BadRequest) as refused:
        filtered(RunFilter, {"until": "x", "status": "x", "workflow": "ok"}, Run.objects.all())
    assert list(refused.value.extra["errors"]) == ["status", "until"]
    assert refused.value.message.startswith("status must be one of") and "; until must be a date" in \
        refused.value.message


@pytest.mark.parametrize("number", ["0", "-1", "²", "٣", "1e3", " 1", str(MAX_ID + 1), "9" * 5000, "x'; drop"])
def test_a_number_is_ascii_digits_within_64_bits(number):
    with pytest.raises(ValidationError) as refused:
        NumberField().clean(number)
    assert refused.value.messages == [f"must be a whole number from 1 to {MAX_ID}, in the digits 0-9"]
