"""The runs list (issue 17, point 26): a duration for each run, tabs with counts (All, Running, Waiting for a
person, Failed) that filter, a row menu offering Run again and Cancel to those who may, and its live part
marked for htmx to read again."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from forge.runs import services
from forge.runs.models import Run
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db

FAILS = """
name: fails
steps:
  - {id: load, agent: mock, command: load, mock: {fail_times: 9, error: disk full}}
"""
QUICK = """
name: quick
steps:
  - {id: only, agent: mock, command: only}
"""


@pytest.fixture
def runs(save_workflow, operator, run):
    """One run of each tab: waiting for a person (`run`), running, failed, completed."""
    running = services.run_start(user=operator, version=save_workflow(QUICK))  # not yet advanced: pending
    failed = fast_forward(services.run_start(user=operator, version=save_workflow(FAILS)))
    completed = fast_forward(services.run_start(user=operator, version=save_workflow(QUICK)))
    assert (run.status, failed.status, completed.status) == ("running", "failed", "completed")
    return {"waiting": run, "running": running, "failed": failed, "completed": completed}


def listed(page) -> set[int]:
    return {int(n) for n in re.findall(r'<tr data-run="(\d+)"', page.content.decode())}


def tab_counts(page) -> dict[str, int]:
    return {tab: int(count) for tab, count in
            re.findall(r'data-tab="(\w+)"[^>]*>[^<]*<span class="count">(\d+)</span>', page.content.decode())}


def test_each_tab_says_how_many_runs_it_holds_and_lists_only_those(client, operator, runs):
    client.force_login(operator)
    page = client.get(reverse("console:runs"))
    assert tab_counts(page) == {"all": 4, "running": 1, "waiting": 1, "failed": 1}
    assert listed(page) == {r.pk for r in runs.values()}
    for tab in ("running", "waiting", "failed"):
        page = client.get(reverse("console:runs"), {"tab": tab})
        assert page.status_code == 200 and listed(page) == {runs[tab].pk}, tab
        assert re.search(rf'data-tab="{tab}" aria-current="page"', page.content.decode())
    # The other filters narrow the counts too
    page = client.get(reverse("console:runs"), {"workflow": "quick"})
    assert tab_counts(page) == {"all": 2, "running": 1, "waiting": 0, "failed": 0}
    assert "waiting for a person" in client.get(reverse("console:runs"), {"tab": "waiting"}).content.decode()


@pytest.mark.parametrize("tab", ["<script>", "all", "Running", "failed ", "x" * 5000])
def test_a_tab_that_is_none_is_said_on_the_page_with_no_rows(client, operator, runs, tab):
    client.force_login(operator)
    page = client.get(reverse("console:runs"), {"tab": tab})
    assert page.status_code == 400 and "tab must be one of" in page.content.decode() and not listed(page)


def test_each_run_shows_its_duration_and_a_run_in_flight_its_time_so_far(client, operator, runs):
    done = runs["completed"]
    Run.objects.filter(pk=done.pk).update(started_at=done.created_at, finished_at=done.created_at + timedelta(seconds=75))
    client.force_login(operator)
    html = client.get(reverse("console:runs")).content.decode()
    row = re.search(rf'<tr data-run="{done.pk}">.*?</tr>', html, re.S).group(0)
    assert '<td data-field="duration">1 min 15 s</td>' in row
    waiting = re.search(rf'<tr data-run="{runs["waiting"].pk}">.*?</tr>', html, re.S).group(0)
    assert re.search(r'data-field="duration">[\d.]+ s <span class="muted">so far</span>', waiting)


def row_of(client, run) -> str:
    html = client.get(reverse("console:runs")).content.decode()
    return re.search(rf'<tr data-run="{run.pk}">.*?</tr>', html, re.S).group(0)


def test_an_operator_is_offered_run_again_and_cancel_only_for_a_run_still_going(client, operator, runs):
    client.force_login(operator)
    waiting, done = row_of(client, runs["waiting"]), row_of(client, runs["completed"])
    assert f'href="/workflows/needs_a_yes/?run_again={runs["waiting"].pk}">Run again' in waiting
    assert f'action="/runs/{runs["waiting"].pk}/cancel/"' in waiting
    assert f'href="/workflows/quick/?run_again={runs["completed"].pk}">Run again' in done
    assert "/cancel/" not in done


def test_run_again_opens_the_run_form_filled_with_the_run_s_arguments(client, operator, save_workflow):
    version = save_workflow("name: greet\nargs:\n  who: {type: string, required: true}\n"
                            "steps:\n  - {id: hello, agent: mock, command: hi}\n")
    run = services.run_start(user=operator, version=version, args={"who": "Ada"})
    client.force_login(operator)
    link = re.search(r'href="([^"]+)">Run again', row_of(client, run)).group(1).replace("&amp;", "&")
    form = client.get(link)
    assert form.status_code == 200 and 'value="Ada"' in form.content.decode()


def test_an_approver_is_offered_neither_and_sees_no_menu(client, approver, runs):
    client.force_login(approver)
    for run in runs.values():
        row = row_of(client, run)
        assert "Run again" not in row and "/cancel/" not in row and "row-menu" not in row


def test_cancel_from_the_list_cancels_the_run(client, operator, runs):
    client.force_login(operator)
    waiting = runs["waiting"]
    response = client.post(reverse("console:cancel", args=[waiting.pk]), {})
    assert response.status_code == 302
    fast_forward(waiting)
    waiting.refresh_from_db()
    assert waiting.status == "cancelled"


def test_the_list_s_live_part_is_read_again_by_htmx_and_the_page_asks_for_the_runs_topic(client, operator, runs):
    client.force_login(operator)
    html = client.get(reverse("console:runs")).content.decode()
    assert '<div id="runs-live" hx-swap-oob="true">' in html
    assert 'ws-connect="/ws/live/?topics=runs"' in html
    assert 'data-live-indicator' in html
    assert "live_page.js" not in html and "htmx.min.js" in html and "ws.min.js" in html
