"""Each role is offered only the actions `forge.accounts.roles.can` allows it, and told why where it matters:
cancel, restart, decide, the schedule toggle and the Run form; a control not offered is still refused if posted.
Decision buttons look like what they do, and what a person reads about a refusal is a sentence with no setting's
name in it."""

import re
from pathlib import Path

import pytest
from django.test import override_settings
from django.urls import reverse

from forge.accounts.roles import can
from forge.runs import services
from forge.runs.models import Approval, Run
from forge.schedules import services as schedules
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db

FAILS = """
name: fails_late
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: disk full}}
"""
ESCALATES = """
name: escalates
steps:
  - id: fetch
    agent: mock
    command: fetch
    on_failure: retry_once_then_escalate
    mock: {fail_times: 2, error: "the service answered 503"}
"""
ROLES = ["operator", "approver", "admin_user"]


@pytest.fixture
def person(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def starter(db):
    return member("sam", "Operators")


@pytest.fixture
def waiting(save_workflow, starter):
    return fast_forward(services.run_start(user=starter, version=save_workflow(APPROVAL)))


@pytest.fixture
def failed(save_workflow, starter):
    return fast_forward(services.run_start(user=starter, version=save_workflow(FAILS)))


def page(client, user, url):
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("person", ROLES, indirect=True)
def test_the_run_page_offers_cancel_and_the_decision_only_to_those_who_may(client, waiting, person):
    html = page(client, person, reverse("console:run", args=[waiting.pk]))
    assert ('id="cancel-form"' in html) == can(person, "run.cancel")
    card = re.search(r'<section class="card approval".*?</section>', html, re.S).group(0)
    may_decide = person.username in ("april", "adam")
    assert ('name="decision"' in card) == may_decide
    assert ("You cannot decide this: you are not an approver." in card) == (not may_decide)


@pytest.mark.parametrize("person", ROLES, indirect=True)
def test_an_ended_run_offers_restart_and_run_again_only_to_those_who_may(client, failed, person):
    html = page(client, person, reverse("console:run", args=[failed.pk]))
    assert ('id="run-main-action"' in html) == can(person, "run.restart")
    assert ("Restart from here" in html) == can(person, "run.restart")
    assert ('id="run-again"' in html) == can(person, "run.start")
    assert 'id="cancel-form"' not in html  # ended: nothing to cancel, for anyone
    panel = page(client, person, reverse("console:step", args=[failed.pk, "load"]))
    assert ('id="panel-restart"' in panel) == can(person, "run.restart")


@pytest.mark.parametrize("person", ROLES, indirect=True)
def test_the_restart_plan_offers_its_button_only_to_those_who_may_restart(client, failed, person):
    html = page(client, person, reverse("console:restart", args=[failed.pk]) + "?step=load")
    assert '<ul id="rerun">' in html  # everyone who may see the run may read the plan
    allowed = can(person, "run.restart")
    assert ("Restart from load</button>" in html) == allowed
    assert ("Only Operators and Admins restart runs: you may read the plan, not start it." in html) == (not allowed)


def test_an_approver_who_posts_a_restart_anyway_is_refused_and_nothing_starts(client, failed, approver):
    html = page(client, approver, reverse("console:restart", args=[failed.pk]) + "?step=load")
    assert 'name="plan"' not in html
    posted = client.post(reverse("console:restart", args=[failed.pk]), {"step": "load", "plan": "0" * 32},
                         follow=True)
    assert Run.objects.count() == 1 and "restart" in posted.content.decode()


def test_a_run_still_going_offers_no_restart_and_says_why(client, waiting, operator):
    html = page(client, operator, reverse("console:restart", args=[waiting.pk]) + "?step=prepare")
    assert "Restart from prepare</button>" not in html
    assert f"Run {waiting.pk} is still running: only an ended run can be restarted." in html


@pytest.mark.parametrize("person", ROLES, indirect=True)
def test_the_workflow_page_offers_the_run_form_and_schedule_toggle_only_to_those_who_may(
        client, save_workflow, person):
    version = save_workflow(APPROVAL)
    schedules.schedule_add(user=None, workflow=version.workflow, cron="0 6 * * *")
    html = page(client, person, reverse("console:workflow", args=[version.workflow.name]))
    assert ('id="run-form"' in html) == can(person, "run.start")
    assert ("Only Operators and Admins start runs." in html) == (not can(person, "run.start"))
    toggles = re.findall(r'action="/schedules/\d+/toggle/"', html)
    assert bool(toggles) == can(person, "schedule.manage")
    assert ("Only Operators and Admins pause or resume schedules." in html) == (not can(person, "schedule.manage"))


def test_the_starter_who_also_approves_is_told_why_in_words_not_a_setting(client, save_workflow):
    both = member("bea", "Operators", "Approvers")
    run = fast_forward(services.run_start(user=both, version=save_workflow(APPROVAL)))
    html = page(client, both, reverse("console:run", args=[run.pk]))
    assert ("You cannot decide this: you started this run, and self-approval is not allowed on this console: "
            "another approver must decide.") in html
    assert "FORGE_" not in html
    with override_settings(FORGE_ALLOW_SELF_APPROVAL=True):
        assert 'name="decision"' in page(client, both, reverse("console:run", args=[run.pk]))


def test_decision_buttons_look_like_what_they_do(client, save_workflow, starter, approver):
    approval_run = fast_forward(services.run_start(user=starter, version=save_workflow(APPROVAL)))
    escalated = fast_forward(services.run_start(user=starter, version=save_workflow(ESCALATES)))
    html = page(client, approver, reverse("console:approvals"))
    buttons = dict(re.findall(r'<button type="submit" name="decision" value="(\w+)" class="([\w-]+)"', html))
    assert buttons == {"approve": "decision-approve", "reject": "decision-reject", "retry": "decision-retry",
                       "skip": "decision-skip", "abort": "decision-abort"}
    assert {a.run_id for a in Approval.objects.all()} == {approval_run.pk, escalated.pk}
    css = (Path(__file__).resolve().parents[3] / "forge/console/static/console/console.css").read_text()
    for refusing in ("decision-reject", "decision-skip", "decision-abort"):  # each its own look, not the blue
        assert re.search(rf"button\[type=submit\]\.{refusing} {{[^}}]*(background|border)", css)


@pytest.mark.parametrize("who, status", [("approver", 200), ("operator", 200), ("outsider", 403)])
def test_the_cards_fragment_is_each_viewers_own_and_refuses_outsiders(client, waiting, request, who, status):
    user = request.getfixturevalue(who)
    client.force_login(user)
    response = client.get(reverse("console:decisions", args=[waiting.pk]))
    assert response.status_code == status
    if status == 200:
        html = response.content.decode()
        assert html.count('class="card approval"') == 1 and "ship it?" in html
        assert ('name="decision"' in html) == (who == "approver")
        assert f'name="next" value="/runs/{waiting.pk}/"' in html or who != "approver"


@pytest.mark.parametrize("run_id", [999_999, 0, 2**70])
def test_the_cards_of_a_run_that_does_not_exist_are_404(client, approver, run_id):
    client.force_login(approver)
    assert client.get(f"/runs/{run_id}/decisions/").status_code == 404


def test_the_cards_fragment_lists_nothing_once_decided(client, waiting, approver):
    services.approval_decide(user=approver, approval=Approval.objects.get(run=waiting), decision="approve")
    fast_forward(waiting)
    html = page(client, approver, reverse("console:decisions", args=[waiting.pk]))
    assert 'class="card approval"' not in html and 'id="decisions"' in html


LONG = """
name: long_step
steps:
  - {id: crunch, agent: mock, command: crunch, timeout: 900}
"""


def test_a_refused_run_says_the_bound_in_words_not_the_setting(client, save_workflow, operator, settings):
    settings.FORGE_STEP_TIMEOUT_MAX_S = 600
    save_workflow(LONG)
    client.force_login(operator)
    html = client.post(reverse("console:workflow", args=["long_step"]), {}, follow=True).content.decode()
    assert ("Step &#x27;crunch&#x27; has a timeout of 900 s, longer than this installation allows "
            "(at most 600 s).") in html
    assert "FORGE_" not in html and not Run.objects.exists()


def test_a_control_posted_by_someone_not_offered_it_is_refused_in_a_sentence(client, save_workflow, approver):
    version = save_workflow(APPROVAL)
    schedule = schedules.schedule_add(user=None, workflow=version.workflow, cron="0 6 * * *")
    client.force_login(approver)
    started = client.post(reverse("console:workflow", args=[version.workflow.name]), {}, follow=True)
    assert "You may not start runs." in started.content.decode() and not Run.objects.exists()
    toggled = client.post(reverse("console:schedule_toggle", args=[schedule.pk]), follow=True)
    assert re.search(r"You may not [a-z ]+schedules\.", toggled.content.decode())
    schedule.refresh_from_db()
    assert schedule.enabled
