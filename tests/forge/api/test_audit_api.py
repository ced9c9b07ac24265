"""GET /api/v1/audit: the trail newest first in cursor pages, filtered as the console's audit page filters it, each
detail as every page shows it (secrets redacted), for members only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.audit.services import audit_event
from tests.forge.api.calls import API, problem, send, signed_in, with_token

pytestmark = pytest.mark.django_db


def event(code: str, *, actor=None, at=None, run_id=None, detail=None) -> AuditEvent:
    made = audit_event(code, user=actor, run_id=run_id, detail=detail, at=at)
    made.save(force_insert=True)
    return made


@pytest.fixture
def trail(operator, admin_user):
    return [event(codes.RUN_STARTED, actor=operator, run_id=7, at=datetime(2030, 1, 1, 9, tzinfo=UTC)),
            event(codes.APPROVAL_APPROVED, actor=admin_user, run_id=7, at=datetime(2030, 1, 2, 9, tzinfo=UTC)),
            event(codes.AGENT_CHANGED, actor=admin_user, at=datetime(2030, 1, 3, 9, tzinfo=UTC),
                  detail={"after": {"config": {"env": {"DB_PASSWORD": "hunter2"},
                                               "url": "https://user:pw@example.com/?key=abc"}}})]


def ids(answer) -> list[int]:
    assert answer.status_code == 200, answer.content
    return [row["id"] for row in answer.json()["results"]]


def test_a_member_reads_the_trail_newest_first(trail, approver):
    answer = signed_in(approver).get(API + "audit")
    assert ids(answer) == [e.pk for e in reversed(trail)]
    first = answer.json()["results"][-1]
    assert first["code"] == codes.RUN_STARTED and first["actor"] == "olive" and first["run"] == 7
    assert first["token"] is None and first["at"].startswith("2030-01-01T09:00")


def test_the_detail_is_shown_redacted_never_as_stored(trail, approver):
    answer = signed_in(approver).get(API + "audit", {"code": codes.AGENT_CHANGED})
    text = answer.content.decode()
    assert "hunter2" not in text and "pw@" not in text and "key=abc" not in text
    (row,) = answer.json()["results"]
    assert row["detail"] == trail[2].shown_detail
    assert row["detail"]["after"]["config"]["env"]["DB_PASSWORD"] == "[redacted]"


def test_the_filters_narrow_the_trail(trail, operator):
    client = signed_in(operator)
    assert ids(client.get(API + "audit", {"run": "7"})) == [trail[1].pk, trail[0].pk]
    assert ids(client.get(API + "audit", {"actor": "adam"})) == [trail[2].pk, trail[1].pk]
    assert ids(client.get(API + "audit", {"code": "forge.approval."})) == [trail[1].pk]
    assert ids(client.get(API + "audit", {"since": "2030-01-02", "until": "2030-01-02"})) == [trail[1].pk]
    assert ids(client.get(API + "audit", {"since": "2030-01-02T10:00Z"})) == [trail[2].pk]


@pytest.mark.parametrize("query", [{"run": "x"}, {"run": "-1"}, {"since": "yesterday"}, {"until": "2030-13-01"},
                                   {"actor": "a" * 151}, {"code": "c" * 81}, {"cursor": "not-a-cursor"},
                                   {"limit": "0"}, {"limit": "201"}])
def test_a_bad_filter_or_cursor_is_a_400(trail, operator, query):
    problem(signed_in(operator).get(API + "audit", query), 400)


def test_the_trail_pages_with_cursors(trail, operator):
    client = signed_in(operator)
    first = client.get(API + "audit", {"limit": "2"}).json()
    assert [row["id"] for row in first["results"]] == [trail[2].pk, trail[1].pk] and first["previous"] is None
    second = client.get(first["next"]).json()
    assert [row["id"] for row in second["results"]] == [trail[0].pk] and second["next"] is None


def test_a_page_reads_a_bounded_number_of_queries(operator, django_assert_max_num_queries):
    client = signed_in(operator)
    for number in range(30):
        event(codes.RUN_STARTED, actor=operator, run_id=number + 1)
    client.get(API + "audit")
    with django_assert_max_num_queries(8):
        answer = client.get(API + "audit")
    assert len(answer.json()["results"]) == 30


def test_an_outsider_may_not_read_the_trail(trail, outsider):
    problem(signed_in(outsider).get(API + "audit"), 403)


def test_nobody_signed_in_is_told_to_sign_in(trail):
    problem(APIClient().get(API + "audit"), 401)


def test_a_token_reads_the_trail_with_audit_read(trail, operator):
    assert ids(with_token(operator, "audit:read").get(API + "audit"))
    assert problem(with_token(operator, "runs:read").get(API + "audit"), 403)["code"] == "scope_missing"


def test_the_trail_is_read_only(trail, admin_user):
    client = signed_in(admin_user)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        problem(send(client, method, "audit", {}), 405)
    assert AuditEvent.objects.count() == len(trail)
