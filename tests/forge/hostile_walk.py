"""What the hostile-value walks of the console and the admin share: the values, and a request that says what
it changed and is undone afterwards, so one test can send hundreds of them to the same rows.

Each request runs in a savepoint that is rolled back: a value the page accepts (a reason of 10,000 characters
is a reason) may start, cancel or save something, and the next request must find the rows as they were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.apps import apps
from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

# The values an attacker tries first, each in every query parameter, path segment and form field.
HOSTILE = {
    "NUL": "a\x00b",
    "control-characters": "a\x1b[2J\x07\x08b",
    "5000-digit-integer": "9" * 5000,
    "superscript-two": "²",
    "arabic-indic-three": "٣",
    "1e999": "1e999",
    "nan": "nan",
    "10000-characters": "x" * 10_000,
}
CONTROL = {"NUL", "control-characters"}  # refused before any view reads them, whatever the field

# More for fields that hold JSON: what json.loads accepts but no database keeps, or cannot read at all.
HOSTILE_JSON = {
    "json-NUL-escape": '{"a": "\\u0000"}',
    "json-lone-surrogate": '{"a": "\\ud800"}',
    "json-NaN": '{"a": NaN}',
    "json-1e999": '{"a": 1e999}',
    "json-5000-digit-integer": '{"a": ' + "9" * 5000 + "}",
    "json-4000-digit-integer": '{"a": ' + "9" * 4000 + "}",
    "json-100000-deep": "[" * 100_000 + "]" * 100_000,
}

# The tables of Forge and of its people and groups (a proxy's table is another app's: the login throttle's,
# which records a failed login by design; sessions change with every message shown).
TABLES = frozenset(m._meta.db_table for m in [*apps.get_models(), User, Group]
                   if m in (User, Group) or m._meta.app_label.startswith("forge") and not m._meta.proxy)
_WRITE = re.compile(r'^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?', re.IGNORECASE)


def written(queries) -> set[str]:
    """The tables of `TABLES` that any of `queries` inserts into, updates or deletes from."""
    return {m.group(1) for q in queries if (m := _WRITE.match(q["sql"]))} & TABLES


@dataclass(frozen=True)
class Sent:
    status: int
    changed: bool
    body: str

    @property
    def refused(self) -> bool:
        return self.status in (400, 404)


def send(client, method: str, url: str, data=None, **extra) -> Sent:
    """One request, undone afterwards; whether it wrote to any of Forge's tables, and its answer."""
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(url, data, **extra)
        transaction.set_rollback(True)
    body = response.content.decode(errors="replace") if not response.streaming else ""
    return Sent(response.status_code, bool(written(queries.captured_queries)), body)
