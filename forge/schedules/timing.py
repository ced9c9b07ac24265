"""Cron expressions and time zones: what a schedule accepts, and when it next falls due."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterError, croniter
from django.core.exceptions import ValidationError

_RANDOM = re.compile(r"(^|[\s,/-])[RH]($|[\s,/(-])", re.IGNORECASE)
MAX_CRON = 120  # Schedule.cron's column
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def cron_problem(expression: str) -> str | None:
    """Why `expression` is not a schedule's cron expression, or None.

    Five fields (minute hour day-of-month month day-of-week) or an @alias. croniter also reads a sixth field
    (seconds), which the clock does not keep; a well-formed expression that never matches (31 February) is
    refused too, since it would never fire.
    """
    text = (expression or "").strip()
    if not text:
        return "give a cron expression, e.g. '0 9 * * 1-5' (09:00 on weekdays)"
    if len(text) > MAX_CRON:
        return f"a cron expression has at most {MAX_CRON} characters; this one has {len(text)}"
    if not (text.lower() in ALIASES or len(text.split()) == 5):
        return (f"{text!r} is not a cron expression of five fields (minute hour day month weekday), "
                f"e.g. '0 9 * * 1-5', nor one of {', '.join(ALIASES)}")
    if _RANDOM.search(text):
        return f"{text!r} uses random (R) or hashed (H) fields, which a schedule does not support"
    try:
        croniter(text, datetime.now(UTC)).get_next(datetime)
    except CroniterError as exc:
        return f"{text!r} is not a usable cron expression: {exc}"
    return None


@cache
def _zones() -> frozenset[str]:
    # Only the IANA names: not `localtime`, `Factory` or `posix/...`, which differ from host to host, so
    # two clusters would compute different due times for one schedule.
    return frozenset(available_timezones()) - {"localtime", "Factory"}


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (e.g. Europe/Berlin); ValueError when there is none."""
    if not isinstance(name, str) or name not in _zones():
        raise ValueError(f"{str(name)[:80]!r} is not a known IANA time zone (e.g. UTC, Europe/Berlin, "
                         f"America/New_York)")
    return ZoneInfo(name)


def validate_cron(value: str) -> None:
    if problem := cron_problem(value):
        raise ValidationError(problem)


def validate_timezone(value: str) -> None:
    try:
        zone(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def next_fire(expression: str, tz: str, after: datetime, *, fired: datetime | None = None) -> datetime:
    """The first time `expression` matches strictly after `after`, read on the wall clock of `tz`, in UTC.

    Matching in the schedule's own zone is what makes '0 9 * * *' in Europe/Berlin 08:00 UTC in winter and
    07:00 UTC in summer. When the clocks go back an hour repeats: as cron does, a time of day (a fixed hour)
    that already fired at `fired` does not fire again in the repeat, while an hourly pattern ('*/20 * * * *')
    goes on by elapsed time.
    """
    here = zone(tz)
    times = croniter(expression.strip(), after.astimezone(here))
    candidate = times.get_next(datetime)
    if fired is not None and not _hourly(expression):
        floor = fired.astimezone(here).replace(tzinfo=None)
        while candidate.replace(tzinfo=None) <= floor:  # at most the repeated hour's matches
            candidate = times.get_next(datetime)
    return candidate.astimezone(UTC)


def _hourly(expression: str) -> bool:
    """Whether the hour field matches every hour (an @alias other than @hourly fixes the hour)."""
    fields = expression.strip().split()
    return fields[1].startswith("*") if len(fields) == 5 else expression.strip().lower() == "@hourly"
