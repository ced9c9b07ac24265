"""The runs list and the run view as people reach them: who may see them, what they read, never a 500."""

import re

import pytest
from django.urls import reverse

from forge.runs import services
from forge.runs.models import RunEvent

pytestmark = pytest.mark.django_db

def test_the_run_view_shows_each_step_its_status_and_why_it_is_not_running(client, run, approver):
    client.force_login(approver)
    page = client.get(reverse("console:run", args=[run.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    row = lambda step: re.search(rf'<tr data-step="{step}".*?</tr>', html, re.S).group(0)  # noqa: E731
    assert "completed" in row("prepare")
    assert "waiting" in row("sign_off") and "waiting for approval by Approvers" in row("sign_off")
    assert "waiting for upstream sign_off" in row("ship")
    last = RunEvent.objects.filter(run=run).order_by("-id").first().pk
    assert f'"last_event_id": {last}' in html


def test_the_runs_list_filters_by_status_and_workflow(client, run, operator):
    client.force_login(operator)
    listed = client.get(reverse("console:runs"), {"status": "running"}).content.decode()
    assert f'data-run="{run.pk}"' in listed
    assert f'data-run="{run.pk}"' not in client.get(reverse("console:runs"), {"status": "failed"}).content.decode()
    assert f'data-run="{run.pk}"' not in client.get(reverse("console:runs"), {"workflow": "other"}).content.decode()


@pytest.mark.parametrize("query, status", [({"status": "<script>"}, 400), ({"since": "yesterday"}, 400),
                                           ({"sort": "password"}, 400), ({"page": "-1"}, 200),
                                           ({"until": "2030-02-31"}, 400)])
def test_a_garbled_filter_is_said_on_the_page_not_a_500(client, run, operator, query, status):
    client.force_login(operator)
    assert client.get(reverse("console:runs"), query).status_code == status


def test_an_outsider_sees_nothing(client, run, outsider):
    client.force_login(outsider)
    for url in (reverse("console:dashboard"), reverse("console:runs"), reverse("console:run", args=[run.pk])):
        assert client.get(url).status_code == 403


def test_someone_not_logged_in_is_sent_to_log_in(client, run):
    page = client.get(reverse("console:run", args=[run.pk]))
    assert page.status_code == 302 and page["Location"].startswith("/login/")


def test_an_unknown_run_is_404(client, operator):
    client.force_login(operator)
    assert client.get(reverse("console:run", args=[999999])).status_code == 404


def test_the_dashboard_shows_what_waits_for_an_approver(client, run, approver):
    client.force_login(approver)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert "ship it?" in html and f"run {run.pk}" in html


def test_the_inbox_shows_what_is_asked_who_started_it_and_what_it_decides_on(client, run, approver):
    client.force_login(approver)
    html = client.get(reverse("console:approvals")).content.decode()
    assert "ship it?" in html and "Started by olive" in html
    assert "<td>prepare</td>" in html and "{&quot;ready&quot;: true}" in html
    assert '<span id="approvals-badge" class="badge">1</span>' in html


def test_the_inbox_of_someone_who_may_not_decide_is_empty(client, run, operator):
    client.force_login(operator)
    html = client.get(reverse("console:approvals")).content.decode()
    assert "Nothing waits for you." in html and "ship it?" not in html


def test_the_audit_page_filters_by_run_person_and_code(client, run, operator):
    client.force_login(operator)
    html = client.get(reverse("console:audit"), {"run": run.pk, "actor": "olive"}).content.decode()
    assert "forge.run.started" in html and "forge.approval.requested" not in html
    html = client.get(reverse("console:audit"), {"code": "forge.approval."}).content.decode()
    assert "forge.approval.requested" in html and "forge.run.started" not in html


@pytest.mark.parametrize("query, status", [({"run": "x'; drop"}, 400), ({"since": "31/12/2030"}, 400),
                                           ({"page": "999"}, 200)])
def test_a_garbled_audit_filter_is_said_on_the_page_not_a_500(client, run, operator, query, status):
    client.force_login(operator)
    assert client.get(reverse("console:audit"), query).status_code == status


def test_a_large_run_lists_its_first_steps_and_shows_all_when_asked(client, save_workflow, operator):
    steps = "".join(f"  - {{id: s{i:03d}, agent: mock, command: go}}\n" for i in range(250))
    run = services.run_start(user=operator, version=save_workflow(f"name: wide\nsteps:\n{steps}"))
    client.force_login(operator)
    page = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert page.count("<tr data-step=") == 200 and "Showing the first 200 of 250 steps" in page
    assert '"id": "s249"' in page  # on the graph all the same
    everything = client.get(reverse("console:run", args=[run.pk]) + "?steps=all").content.decode()
    assert everything.count("<tr data-step=") == 250 and "Showing the first" not in everything
