"""AuditFilter: each filter of the audit trail keeps the events it names, and a value that names nothing is a
BadRequest saying which filter, in the sentence the console's audit page shows."""

from datetime import datetime, timezone

import pytest
from django.urls import reverse

from forge.audit.filters import AuditFilter
from forge.audit.models import AuditEvent
from forge.audit.services import audit_event
from forge.errors import BadRequest
from forge.filters import MAX_ID, filtered

pytestmark = pytest.mark.django_db


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2001, 6, day, hour, tzinfo=timezone.utc)


@pytest.fixture
def events(operator):
    """Three events, oldest first: olive's run 7 start, olive's run 7 approval, the system's schedule fire."""
    made = [audit_event("forge.run.started", user=operator, run_id=7, at=at(1)),
            audit_event("forge.approval.approved", user=operator, run_id=7, at=at(2)),
            audit_event("forge.schedule.fired", target="schedule:1", at=at(3))]
    for event in made:
        event.save()
    return made


def kept(query, events) -> set[int]:
    order = {event.pk: i for i, event in enumerate(events)}
    return {order[pk] for pk in filtered(AuditFilter, query, AuditEvent.objects.all()).values_list("pk", flat=True)}


@pytest.mark.parametrize("query, expected", [
    ({}, {0, 1, 2}), ({"run": "7"}, {0, 1}), ({"run": "8"}, set()), ({"run": str(MAX_ID)}, set()),
    ({"actor": "olive"}, {0, 1}), ({"actor": "system"}, {2}), ({"actor": "oliv"}, set()),
    ({"code": "forge.run."}, {0}), ({"code": "forge."}, {0, 1, 2}), ({"code": "forge.run.started"}, {0}),
    ({"code": "run"}, set()), ({"code": "forge.%"}, set()), ({"code": "forge._un"}, set()),
    ({"since": "2001-06-02"}, {1, 2}), ({"until": "2001-06-02"}, {0, 1}),
    ({"since": "2001-06-02T12:00Z", "until": "2001-06-02T14:00+02:00"}, {1}),
    ({"since": "2001-06-02T12:00:00.000001"}, {2}),
])
def test_each_filter_keeps_the_events_it_names(events, query, expected):
    assert kept(query, events) == expected


@pytest.mark.parametrize("query, says", [
    ({"run": "٣"}, f"run must be a whole number from 1 to {MAX_ID}, in the digits 0-9"),
    ({"run": "0"}, f"run must be a whole number from 1 to {MAX_ID}, in the digits 0-9"),
    ({"actor": "a" * 151}, "actor must be at most 150 characters long (it has 151)"),
    ({"code": "c" * 81}, "code must be at most 80 characters long (it has 81)"),
    ({"since": "31/12/2030"}, "since must be a date written YYYY-MM-DD, or a moment YYYY-MM-DDTHH:MM"),
    ({"until": "9999-12-31T23:59-01:00"}, "until must be between 0001-01-01 and 9999-12-31 in UTC"),
])
def test_a_value_that_names_nothing_is_a_bad_request_in_the_pages_words(client, operator, events, query, says):
    with pytest.raises(BadRequest) as refused:
        filtered(AuditFilter, query, AuditEvent.objects.all())
    assert refused.value.message == says and refused.value.extra["errors"] == {next(iter(query)): [says]}
    client.force_login(operator)
    page = client.get(reverse("console:audit"), query)
    assert page.status_code == 400 and says in page.content.decode()
