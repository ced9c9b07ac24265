"""Cancel, decide and restart from the console: each through its service, audited, refused with a reason."""

import re

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, Run
from forge.runs.restart_plan import restart_plan
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db

FAILS = """
name: fails_late
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""


@pytest.fixture
def waiting(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))


@pytest.fixture
def failed(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(FAILS)))


def test_an_approver_approves_with_a_comment_and_the_run_goes_on(client, waiting, approver):
    client.force_login(approver)
    approval = Approval.objects.get(run=waiting)
    page = client.post(reverse("console:decide", args=[approval.pk]), {"decision": "approve", "comment": "fine"},
                       follow=True)
    assert f"You approved sign_off in run {waiting.pk}. The run is recording it." in page.content.decode()
    run = fast_forward(waiting)
    approval.refresh_from_db()
    assert (approval.status, approval.comment, approval.decided_by, run.status) == (
        "approved", "fine", approver, "completed")


def test_the_person_who_started_the_run_is_told_why_they_may_not_decide(client, waiting, operator):
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[waiting.pk])).content.decode()
    assert "you are not an approver" in html.lower()
    approval = Approval.objects.get(run=waiting)
    page = client.post(reverse("console:decide", args=[approval.pk]), {"decision": "approve"}, follow=True)
    assert "not an approver" in page.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == "pending"


def test_a_decision_the_approval_does_not_offer_changes_nothing(client, waiting, approver):
    client.force_login(approver)
    approval = Approval.objects.get(run=waiting)
    page = client.post(reverse("console:decide", args=[approval.pk]), {"decision": "abort"}, follow=True)
    assert "Nothing was decided: choose one of approve, reject." in page.content.decode()
    assert not AuditEvent.objects.filter(code="forge.approval.decision_requested").exists()


def test_an_operator_cancels_a_run_and_the_confirmation_says_what_stops(client, waiting, operator):
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[waiting.pk])).content.decode()
    assert 'id="cancel-form"' in html  # its confirmation names what stops as the page shows it (browser test)
    client.post(reverse("console:cancel", args=[waiting.pk]), {"reason": "wrong vendor"})
    assert fast_forward(waiting).status == "cancelled"
    requested = AuditEvent.objects.get(code="forge.run.cancel_requested", run_id=waiting.pk)
    assert (requested.actor, requested.detail["reason"]) == ("olive", "wrong vendor")


def test_a_cancel_reason_too_long_to_keep_whole_cancels_nothing_and_says_so(client, waiting, operator):
    client.force_login(operator)
    page = client.post(reverse("console:cancel", args=[waiting.pk]), {"reason": "x" * 2001}, follow=True)
    assert "The reason has 2001 characters; at most 2000 are accepted." in page.content.decode()
    assert fast_forward(waiting).status == "running"
    assert not AuditEvent.objects.filter(code="forge.run.cancel_requested").exists()


def test_a_comment_too_long_to_keep_whole_decides_nothing_and_says_so(client, waiting, approver):
    client.force_login(approver)
    approval = Approval.objects.get(run=waiting)
    page = client.post(reverse("console:decide", args=[approval.pk]),
                       {"decision": "approve", "comment": "y" * 10_000}, follow=True)
    assert "The comment has 10000 characters; at most 2000 are accepted." in page.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.parametrize("next_page", ["nan", "²", "1e999", "x" * 10_000])
def test_a_decision_goes_back_to_any_page_named_on_this_site_and_never_fails_on_the_name(
        client, waiting, approver, next_page):
    client.force_login(approver)
    approval = Approval.objects.get(run=waiting)
    page = client.post(reverse("console:decide", args=[approval.pk]), {"decision": "approve", "next": next_page})
    assert page.status_code == 302 and fast_forward(waiting).status == "completed"


def test_cancel_is_a_post(client, waiting, operator):
    client.force_login(operator)
    assert client.get(reverse("console:cancel", args=[waiting.pk])).status_code == 405


def test_restart_shows_the_plan_then_starts_the_run_bound_to_it(client, failed, operator):
    client.force_login(operator)
    assert failed.status == "failed"
    plan = client.get(reverse("console:restart", args=[failed.pk]), {"step": "load"}).content.decode()
    assert re.search(r'<ul id="rerun">\s*<li>load</li><li>report</li>', plan)
    assert "<td>fetch</td>" in plan and "{&quot;rows&quot;: 3}" in plan
    fingerprint = re.search(r'name="plan" value="(\w+)"', plan).group(1)
    stale = client.post(reverse("console:restart", args=[failed.pk]), {"step": "load", "plan": "0" * 32}, follow=True)
    assert "The plan changed" in stale.content.decode() and Run.objects.count() == 1
    client.post(reverse("console:restart", args=[failed.pk]), {"step": "load", "plan": fingerprint})
    new = Run.objects.exclude(pk=failed.pk).get()
    assert (new.restarted_from, new.restart_from_step) == (failed, "load")
    html = client.get(reverse("console:run", args=[new.pk])).content.decode()
    fetch_row = re.search(r'<tr data-step="fetch".*?</tr>', html, re.S).group(0)
    assert "carried" in fetch_row
    assert "carried" not in re.search(r'<tr data-step="load".*?</tr>', html, re.S).group(0)


def test_restart_from_a_step_the_workflow_lacks_says_so(client, failed, operator):
    client.force_login(operator)
    page = client.get(reverse("console:restart", args=[failed.pk]), {"step": "nosuch"}, follow=True)
    assert "has no step" in page.content.decode()


def test_an_approver_may_not_restart(client, failed, approver):
    client.force_login(approver)
    plan = client.get(reverse("console:restart", args=[failed.pk]), {"step": "load"}).content.decode()
    assert 'name="plan"' not in plan  # not offered (test_offered_actions); posted anyway, it is refused
    fingerprint = restart_plan(failed, "load").fingerprint
    page = client.post(reverse("console:restart", args=[failed.pk]), {"step": "load", "plan": fingerprint},
                       follow=True)
    assert "may not restart" in page.content.decode() and Run.objects.count() == 1


def test_the_step_panel_shows_each_attempt_with_its_error_and_what_the_step_returned(client, failed, operator):
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[failed.pk, "load"])).content.decode()
    assert html.count("disk full") >= 2  # the step's error, and its last attempt's
    assert re.search(r'<tr data-attempt="1"><td>1</td>', html)
    fetched = client.get(reverse("console:step", args=[failed.pk, "fetch"])).content.decode()
    assert "&quot;rows&quot;: 3" in fetched


def test_the_step_panel_of_an_approval_says_who_decided_and_why(client, waiting, approver):
    client.force_login(approver)
    approval = Approval.objects.get(run=waiting)
    client.post(reverse("console:decide", args=[approval.pk]), {"decision": "reject", "comment": "not this one"})
    fast_forward(waiting)
    html = client.get(reverse("console:step", args=[waiting.pk, "sign_off"])).content.decode()
    assert "Rejected by april" in html and "not this one" in html


def test_a_step_the_run_lacks_is_404(client, failed, operator):
    client.force_login(operator)
    assert client.get(reverse("console:step", args=[failed.pk, "nosuch"])).status_code == 404
