"""The filters of the runs list and the audit trail: every valid value of each kind filters (200); a value
that is none of them is said on the page, with a 400 and no rows, never guessed at nor a 500."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, operator):
    client.force_login(operator)
    return client


def day(delta: int = 0) -> str:
    return (timezone.now() + timedelta(days=delta)).date().isoformat()


def listed(page, run) -> bool:
    return f'data-run="{run.pk}"' in page.content.decode()


@pytest.mark.parametrize("query, lists_it", [
    ({"status": "running"}, True), ({"status": "failed"}, False),
    ({"workflow": "needs_a_yes"}, True), ({"workflow": "other"}, False),
    ({"started_by": "olive"}, True), ({"started_by": "april"}, False),
    ({"since": day()}, True), ({"since": day(1)}, False),
    ({"until": day()}, True), ({"until": day(-1)}, False),
    ({"since": "0001-01-01", "until": "9999-12-31"}, True),
    ({"sort": "-created"}, True), ({"sort": "workflow"}, True),
    ({"page": "1"}, True), ({"page": "999"}, True), ({"page": "-1"}, True), ({"page": "²"}, True),
])
def test_each_runs_filter_takes_its_valid_values(signed_in, run, query, lists_it):
    page = signed_in.get(reverse("console:runs"), query)
    assert (page.status_code, listed(page, run)) == (200, lists_it)


@pytest.mark.parametrize("query, says", [
    ({"status": "<script>"}, "status must be one of"),
    ({"sort": "password"}, "sort must be one of"),
    ({"since": "yesterday"}, "since must be a date written YYYY-MM-DD"),
    ({"until": "2030-02-31"}, "until must be a date written YYYY-MM-DD"),
    ({"since": "٢٠٢٤-٠١-٠١"}, "since must be a date written YYYY-MM-DD"),
    ({"since": "+2024-01-01"}, "since must be a date written YYYY-MM-DD"),
    ({"workflow": "w" * 129}, "workflow must be at most 128 characters long (it has 129)"),
    ({"started_by": "x" * 10_000}, "started_by must be at most 150 characters long (it has 10000)"),
])
def test_a_runs_filter_that_means_nothing_is_said_on_the_page(signed_in, run, query, says):
    page = signed_in.get(reverse("console:runs"), query)
    assert page.status_code == 400 and says in page.content.decode() and not listed(page, run)
    assert "No run matches." in page.content.decode()


@pytest.mark.parametrize("query, shows", [
    ({"run": "RUN"}, True), ({"run": "999999"}, False), ({"run": str(2**63 - 1)}, False),
    ({"actor": "olive"}, True), ({"actor": "april"}, False),
    ({"code": "forge.run."}, True), ({"code": "forge.schedule."}, False),
    ({"since": day()}, True), ({"since": day(1)}, False),
    ({"until": day()}, True), ({"until": day(-1)}, False),
])
def test_each_audit_filter_takes_its_valid_values(signed_in, run, query, shows):
    query = {k: str(run.pk) if v == "RUN" else v for k, v in query.items()}
    page = signed_in.get(reverse("console:audit"), query)
    assert (page.status_code, "forge.run.started" in page.content.decode()) == (200, shows)


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, str(2**63), "0", "-1", "1e3", " 1", "x'; drop"])
def test_an_audit_run_that_is_no_run_number_is_said_on_the_page(signed_in, run, value):
    page = signed_in.get(reverse("console:audit"), {"run": value})
    html = page.content.decode()
    assert page.status_code == 400 and f"run must be a whole number from 1 to {2**63 - 1}" in html
    assert "forge.run.started" not in html and "No audit event matches." in html


@pytest.mark.parametrize("query", [{"actor": "a" * 151}, {"code": "c" * 81}, {"since": "31/12/2030"},
                                   {"until": "1e999"}])
def test_an_audit_filter_that_means_nothing_is_said_on_the_page(signed_in, run, query):
    page = signed_in.get(reverse("console:audit"), query)
    assert page.status_code == 400 and f"{next(iter(query))} must be" in page.content.decode()
