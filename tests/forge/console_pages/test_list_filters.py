"""The filters of the runs list and the audit trail: every valid value of each kind filters (200); a value
that is none of them is said on the page, with a 400 and no rows, never guessed at nor a 500."""

import re
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.urls import reverse
from django.utils import timezone

from forge.audit.services import audit_event
from forge.console import urls as console_urls
from forge.console.filters import MAX_ID, Filters
from forge.filters import FilterSet
from forge.runs.models import Run

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


# -- Every filter of every page, found in the code ---------------------------------------------------------------
# Each console page reads its query string through a FilterSet (forge.filters) or, for a page that lists no
# model's rows, forge.console.filters.Filters; both record what each filter takes (`asked`). The walk asks every
# page of the console once, learns its filters from what it asked, and tries each with a valid value of its kind,
# the bounds, and garbled or hostile ones: a filter added to any page later is walked without changing this test.

OLD = datetime(2001, 6, 1, 11, 30, tzinfo=dt_timezone.utc)  # a run and an audit event of long ago


def valid(kind: str, takes: dict) -> list[str]:
    if kind == "text":
        return ["x", "Ünïcode ☃", "a" * takes["limit"], "'; drop table x; --", "%_"]
    if kind == "choice":
        return list(takes["options"])
    if kind == "number":
        return ["1", str(MAX_ID)]
    if kind == "month":
        return ["0001-01", "2026-02", "9999-12"]
    today = timezone.now().date().isoformat()
    return [today, "0001-01-01", "9999-12-31", f"{today}T00:00", f"{today}T23:59:59.999999", f"{today}T12:00Z",
            f"{today}T12:00:00+05:30", f"{today}T12:00-08:00", "0001-01-01T00:00Z", "9999-12-31T23:59:59Z"]


def garbled(kind: str, takes: dict) -> list[str]:
    if kind == "text":
        return ["a" * (takes["limit"] + 1)]
    if kind == "choice":
        return ["<script>alert(1)</script>", "NOT-ONE-" + "x" * 5000, " " + (takes["options"] or ("x",))[-1]]
    if kind == "number":
        return ["0", "-1", "²", "٣", "1e3", " 1", str(MAX_ID + 1), "9" * 5000, "x'; drop"]
    if kind == "month":
        return ["2026-13", "2026-00", "0000-12", "2026-1", "2026-01-01", "٢٠٢٦-٠١", "+2026-01", "26-01", "9" * 5000]
    return ["yesterday", "2030-02-31", "٢٠٢٤-٠١-٠١", "+2024-01-01", "31/12/2030", "1e999", "2024-01-01T25:00",
            "2024-01-01T10:00+24:00", "2024-01-01 10:00", "0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00",
            "2024-01-01T10:00:00.1234567", "9" * 5000]


@pytest.fixture
def asked(monkeypatch):
    """Every Filters and FilterSet a request made, as it made them."""
    made = []
    for reader in (Filters, FilterSet):
        def record(self, *args, real=reader.__init__, **kwargs):
            real(self, *args, **kwargs)
            made.append(self)

        monkeypatch.setattr(reader, "__init__", record)
    return made


def console_pages(run) -> list[str]:
    """Every console address, its parameters filled in with the run's (a new kind of parameter fails here)."""
    values = {"run_id": run.pk, "step": "sign_off", "name": run.workflow.name, "content_hash": run.version.content_hash,
              "schedule_id": 1, "approval_id": 1, "artifact_id": 1, "draft_id": 1}
    return [reverse(f"console:{p.name}", kwargs={k: values[k] for k in p.pattern.converters})
            for p in console_urls.urlpatterns]


def filters_of(client, path: str, asked) -> dict[str, dict]:
    asked.clear()
    client.get(path)
    return {name: takes for given in asked for name, takes in given.asked.items()}


def test_the_walk_finds_the_filters_of_the_runs_list_the_audit_trail_and_the_run_log(signed_in, run, asked):
    found = {path: set(filters_of(signed_in, path, asked)) for path in console_pages(run)}
    assert {"status", "workflow", "started_by", "since", "until", "sort"} <= found[reverse("console:runs")]
    assert {"run", "actor", "code", "since", "until"} <= found[reverse("console:audit")]
    assert found[reverse("console:run_log", args=[run.pk])]  # a fragment's filters are walked too


def test_every_form_field_of_a_list_page_is_a_filter_the_walk_knows(signed_in, run, asked):
    """A filter put in a page's form but read some other way than through a FilterSet or Filters would escape the
    walk."""
    for path in console_pages(run):
        known = filters_of(signed_in, path, asked)
        page = signed_in.get(path)
        if page.status_code != 200 or "text/html" not in page.get("Content-Type", ""):
            continue
        for form in re.findall(r'<form class="filters".*?</form>', page.content.decode(), re.S):
            names = set(re.findall(r'<(?:input|select)[^>]* name="([^"]+)"', form))
            assert names <= set(known), f"{path}: {names - set(known)} not read through a FilterSet or Filters"


def test_every_filter_of_every_page_takes_each_valid_value_and_says_what_is_wrong_with_a_garbled_one(
        signed_in, run, asked):
    walked = 0
    for path in console_pages(run):
        for name, takes in filters_of(signed_in, path, asked).items():
            kind = takes["kind"]
            for value in valid(kind, takes):
                page = signed_in.get(path, {name: value})
                said = page.content.decode()
                assert page.status_code in (200, 400), (path, name, value, page.status_code)
                if kind in ("choice", "day") or page.status_code == 400:  # 400: the page says why, naming it
                    assert page.status_code == 200 or name in said, (path, name, value, said[:500])
                walked += 1
            for value in garbled(kind, takes):
                page = signed_in.get(path, {name: value})
                said = page.content.decode()
                assert page.status_code == 400 and f"{name} must" in said, (path, name, value[:40], page.status_code)
                assert "Traceback" not in said
                walked += 1
    assert walked > 100


@pytest.fixture
def old_run(run):
    Run.objects.filter(pk=run.pk).update(created_at=OLD)
    audit_event("forge.test.long_ago", target="test:old", at=OLD).save()
    return run


def shows(page, kind_of_page: str, run) -> bool:
    html = page.content.decode()
    return f'data-run="{run.pk}"' in html if kind_of_page == "runs" else "forge.test.long_ago" in html


@pytest.mark.parametrize("kind_of_page", ["runs", "audit"])
def test_each_date_filter_keeps_what_is_inside_its_bounds_and_drops_what_is_outside(
        signed_in, old_run, asked, kind_of_page):
    """The run and the audit event are of 2001-06-01 11:30 UTC; every date filter of the page (found by the
    walk) is tried with a date, a moment with and without a zone, on both sides of it."""
    path = reverse(f"console:{kind_of_page}")
    dates = {name: takes for name, takes in filters_of(signed_in, path, asked).items() if takes["kind"] == "day"}
    assert dates
    # (value, kept by a lower bound (since), kept by an upper one (until)): both are inclusive
    bounds = [("2001-06-01", True, True), ("2001-06-02", False, True), ("2001-05-31", True, False),
              ("2001-06-01T11:30", True, True), ("2001-06-01T11:00", True, False), ("2001-06-01T12:00Z", False, True),
              ("2001-06-01T13:00+02:00", True, False), ("2001-06-01T14:00+02:00", False, True),
              ("0001-01-01", True, False), ("9999-12-31", False, True)]
    for name, takes in dates.items():
        for value, by_since, by_until in bounds:
            page = signed_in.get(path, {name: value})
            kept = by_until if takes["end"] else by_since
            assert (page.status_code, shows(page, kind_of_page, old_run)) == (200, kept), (name, value)
