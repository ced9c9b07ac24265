"""The run view's header says how a run was started, its arguments, its duration and its phases; the steps table
and panel name each step; the main button restarts from the failed step, Run again fills the Run form."""

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from forge.console.run_head import duration_text
from forge.runs import services
from forge.runs.models import Approval, Run
from forge.schedules import services as schedules
from forge.schedules.firing import fire_due_schedules
from forge.workflows.models import StepLibraryEntry
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db

PHASED = """
name: phased
phases: [intake, ship]
args:
  region: {type: string, required: true}
  copies: {type: integer, default: 1}
  notes: {type: string, default: ""}
steps:
  - {id: fetch, name: Fetch the orders, phase: intake, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, name: Load them, phase: ship, agent: mock, command: load, depends_on: [fetch],
     mock: {fail_times: 9, error: disk full}}
  - {id: report, phase: ship, agent: mock, command: report, depends_on: [load]}
"""

USES_LIBRARY = """
name: uses_library
steps:
  - {id: fetch, library_step: fetch_report}
"""

CHILD = """
name: child_flow
steps:
  - {id: inner, agent: mock, command: inner, mock: {outputs: {ok: true}}}
"""

PARENT = """
name: parent_flow
steps:
  - {id: call, workflow_ref: {name: child_flow}}
"""


def head_of(client, run) -> str:
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    start = html.index('<header class="run-head">')
    return html[start:html.index("</header>", start)]


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def failed(save_workflow, operator):
    version = save_workflow(PHASED)
    return fast_forward(services.run_start(user=operator, version=version, args={"region": "eu-west"}))


@pytest.mark.parametrize("role", ["operator", "approver", "admin_user"])
def test_every_role_reads_the_arguments_origin_duration_and_phases(client, failed, role, request):
    client.force_login(request.getfixturevalue(role))
    head = head_of(client, failed)
    said = text(head)
    assert f"Started by {failed.started_by.get_username()} at" in said
    assert 'data-origin="person"' in head
    assert "region = eu-west" in said and "copies = 1" in said
    assert re.search(r"Duration \d+\.\d s", said), said  # ended quickly: to a tenth
    assert 'data-end=""' not in head  # an ended run's clock is fixed
    assert "intake (1 step) → ship (2 steps)" in said
    may_start = role != "approver"
    assert ("Run again" in said) == may_start
    assert ("Restart from the failed step (load)" in said) == may_start  # approvers may not restart


@pytest.mark.parametrize(("seconds", "ticking", "said"), [
    (0, False, "0.0 s"), (0.44, False, "0.4 s"), (9.94, False, "9.9 s"), (9.99, True, "9 s"), (10, False, "10 s"),
    (59.9, False, "59 s"), (60, False, "1 min 00 s"), (3599, True, "59 min 59 s"), (3600, False, "1 h 00 min 00 s"),
    (90061, False, "25 h 01 min 01 s"), (-3, False, "0.0 s")])
def test_a_duration_reads_in_words(seconds, ticking, said):
    assert duration_text(seconds, ticking=ticking) == said


def test_the_steps_table_names_each_step_and_its_phase(client, failed, operator):
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[failed.pk])).content.decode()
    row = re.search(r'<tr data-step="load".*?</tr>', html, re.S).group(0)
    assert '<span class="step-name">Load them</span>' in row
    assert '<span class="phase-tag" title="phase">ship</span>' in row
    report = re.search(r'<tr data-step="report".*?</tr>', html, re.S).group(0)
    assert "step-name" not in report  # no name: only its id


def test_a_live_run_ticks_and_offers_no_restart(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))
    client.force_login(operator)
    head = head_of(client, run)
    assert run.status == "running"
    assert re.search(r'data-end=""', head) and "so far" in head
    assert re.search(r'id="run-main-action"[^>]*hidden', head.replace("\n", " "))


def test_a_long_argument_is_cut_with_a_way_to_see_all(client, save_workflow, operator):
    long = "x" * 300 + "END"
    run = fast_forward(services.run_start(user=operator, version=save_workflow(PHASED),
                                          args={"region": "eu", "notes": long}))
    client.force_login(operator)
    head = head_of(client, run)
    arg = re.search(r'<div class="arg" data-arg="notes">.*?</div>', head, re.S).group(0)
    assert "<details>" in arg and "show all (303 characters)" in arg and long in arg
    assert "x" * 80 + "…" in arg


SECRETIVE = """
name: secretive
args:
  api_token: {type: string}
  source: {type: string}
  region: {type: string}
steps:
  - {id: pull, agent: mock, command: pull, mock: {outputs: {ok: true}}}
"""


def test_an_argument_that_reads_as_a_secret_is_shown_redacted_and_not_filled_again(client, save_workflow, operator):
    """The format marks no argument secret; the header shows what the audit trail shows of the same arguments."""
    run = fast_forward(services.run_start(user=operator, version=save_workflow(SECRETIVE), args={
        "api_token": "tok-4242-hidden", "source": "https://bob:hunter2@example.com/rows?sig=abc", "region": "eu"}))
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert "tok-4242-hidden" not in html and "hunter2" not in html and "sig=abc" not in html
    said = text(head_of(client, run))
    assert "api_token = [redacted] (reads as a secret)" in said and "source = [redacted]" in said  # a URL with a password
    assert "region = eu" in said
    form = client.get(f"/workflows/secretive/?run_again={run.pk}").content.decode()
    assert "tok-4242-hidden" not in form and "hunter2" not in form
    assert 'name="arg-region" value="eu"' in form and 'name="arg-api_token" value=""' in form
    assert "Not filled, as they read as secrets: api_token, source; type them again." in form


def test_a_run_started_by_a_schedule_says_which(client, save_workflow, operator):
    workflow = save_workflow(PHASED).workflow
    monday = datetime(2030, 1, 14, 10, 0, 30, tzinfo=UTC)
    schedule = schedules.schedule_add(user=operator, workflow=workflow, cron="*/10 * * * *", now=monday,
                                      args={"region": "ap"})
    assert fire_due_schedules(now=datetime(2030, 1, 14, 10, 10, tzinfo=UTC)) == {"dispatched": 1}
    run = Run.objects.get()
    client.force_login(operator)
    head = head_of(client, run)
    assert 'data-origin="schedule"' in head
    assert f"Started by schedule {schedule.pk} ( */10 * * * * , due 2030-01-14 10:10 UTC) as {operator.username}" \
        in text(head)
    schedules.schedule_delete(user=operator, schedule=schedule)  # the audit trail still says so
    assert f"Started by schedule {schedule.pk} (deleted since, due 2030-01-14 10:10 UTC) as {operator.username}" \
        in text(head_of(client, run))


def test_a_restart_says_of_which_run_and_from_which_step(client, failed, operator):
    new = services.run_restart(user=operator, run=failed, step="load")
    client.force_login(operator)
    head = head_of(client, new)
    assert 'data-origin="restart"' in head
    assert f"Restart of run {failed.pk} from step load, by {operator.username}" in text(head)
    assert f'href="/runs/{failed.pk}/"' in head
    Run.objects.filter(pk=failed.pk).delete()  # the restart keeps what it was
    assert "Restart of a run deleted since from step load" in text(head_of(client, new))


def test_a_sub_workflow_says_whose(client, save_workflow, operator):
    save_workflow(CHILD)
    parent = fast_forward(services.run_start(user=operator, version=save_workflow(PARENT)))
    child = Run.objects.get(parent=parent)
    client.force_login(operator)
    head = head_of(client, child)
    assert 'data-origin="child"' in head
    assert f"Sub-workflow of run {parent.pk} (its step call)" in text(head)


def test_a_completed_run_offers_run_again_first(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(CHILD)))
    assert run.status == "completed"
    client.force_login(operator)
    head = head_of(client, run).replace("\n", " ")
    assert re.search(r'id="run-main-action"[^>]*hidden', head)
    assert re.search(r'class="button" href="/workflows/child_flow/\?run_again=' + str(run.pk), head)


class TestStepPanel:
    def test_it_names_the_step_and_offers_a_restart_from_it(self, client, failed, operator):
        client.force_login(operator)
        html = client.get(reverse("console:step", args=[failed.pk, "fetch"])).content.decode()
        assert "Fetch the orders" in html and "phase intake" in html
        assert f'href="/runs/{failed.pk}/restart/?step=fetch"' in html and "Restart from fetch" in html

    def test_an_approver_is_offered_no_restart(self, client, failed, approver):
        client.force_login(approver)
        html = client.get(reverse("console:step", args=[failed.pk, "fetch"])).content.decode()
        assert "Restart from" not in html

    def test_it_offers_the_decision_of_its_pending_approval_to_who_may_decide(self, client, save_workflow,
                                                                               operator, approver):
        run = fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))
        approval = Approval.objects.get(run=run)
        client.force_login(approver)
        html = client.get(reverse("console:step", args=[run.pk, "sign_off"])).content.decode()
        assert f'action="{reverse("console:decide", args=[approval.pk])}"' in html
        assert f'id="panel-comment-{approval.pk}"' in html and 'value="approve"' in html
        assert "Restart from" not in html  # the run has not ended
        client.force_login(operator)  # who may not decide it is told why
        html = client.get(reverse("console:step", args=[run.pk, "sign_off"])).content.decode()
        assert 'value="approve"' not in html and "You cannot decide this: you are not an approver." in html


class TestRunAgain:
    def url(self, run) -> str:
        return f"/workflows/{run.workflow.name}/?run_again={run.pk}"

    def test_the_form_is_filled_with_the_runs_arguments_on_its_own_version(self, client, failed, operator,
                                                                           save_workflow):
        newer = save_workflow(PHASED.replace("default: 1", "default: 2"))
        assert newer.number == failed.version.number + 1
        client.force_login(operator)
        page = client.get(self.url(failed))
        html = page.content.decode()
        assert page.status_code == 200
        assert 'name="arg-region" value="eu-west"' in html and 'name="arg-copies" value="1"' in html
        assert f'name="version" value="{failed.version.number}"' in html
        assert f"Filled with the arguments of" in html and f"on its version v{failed.version.number}" in html

    def test_it_starts_that_version_with_a_changed_argument(self, client, failed, operator, save_workflow):
        save_workflow(PHASED.replace("default: 1", "default: 2"))
        client.force_login(operator)
        page = client.post(f"/workflows/{failed.workflow.name}/", {
            "version": str(failed.version.number), "arg-region": "us-east", "arg-copies": "1"})
        new = Run.objects.exclude(pk=failed.pk).get()
        assert page.status_code == 302 and page["Location"] == f"/runs/{new.pk}/"
        assert (new.version, new.args["region"], new.started_by) == (failed.version, "us-east", operator)

    @pytest.mark.parametrize("given", ["abc", "-1", "1.5", "", "9" * 40, "%00", "²", "999999"])
    def test_a_hostile_run_again_is_refused_clearly(self, client, failed, operator, given):
        client.force_login(operator)
        page = client.get(f"/workflows/{failed.workflow.name}/", {"run_again": given})
        html = page.content.decode()
        assert page.status_code == 400
        assert "you may see, so the form is not filled from it" in html
        assert 'name="arg-region" value="eu-west"' not in html

    def test_another_workflows_run_is_refused(self, client, failed, operator, save_workflow):
        other = fast_forward(services.run_start(user=operator, version=save_workflow(CHILD)))
        client.force_login(operator)
        page = client.get(f"/workflows/{failed.workflow.name}/", {"run_again": str(other.pk)})
        assert page.status_code == 400 and f"phased has no run &#x27;{other.pk}&#x27;" in page.content.decode()

    def test_who_may_not_start_runs_gets_no_form(self, client, failed, approver):
        client.force_login(approver)
        page = client.get(self.url(failed))
        assert page.status_code == 200 and "Only Operators and Admins start runs." in page.content.decode()

    def test_a_person_in_no_group_sees_nothing(self, client, failed, outsider):
        client.force_login(outsider)
        page = client.get(self.url(failed))
        assert page.status_code == 403 and "eu-west" not in page.content.decode()

    def test_a_run_whose_version_no_longer_compiles_is_refused_clearly(self, client, save_workflow, operator):
        StepLibraryEntry.objects.create(name="fetch_report", definition={"agent": "mock", "command": "fetch"})
        run = fast_forward(services.run_start(user=operator, version=save_workflow(USES_LIBRARY)))
        StepLibraryEntry.objects.filter(name="fetch_report").delete()
        StepLibraryEntry.objects.create(name="other", definition={"agent": "mock", "command": "other"})
        client.force_login(operator)
        page = client.get(f"/workflows/uses_library/?run_again={run.pk}")
        assert page.status_code == 400
        assert "cannot run with today&#x27;s step library" in page.content.decode()
        assert 'id="run-again-note"' not in page.content.decode()

    @pytest.mark.parametrize("given", ["abc", "0", "99", "-1", "9" * 40])
    def test_a_hostile_version_starts_nothing(self, client, failed, operator, given):
        client.force_login(operator)
        page = client.post(f"/workflows/{failed.workflow.name}/", {"version": given, "arg-region": "x"})
        assert page.status_code == 400 and "nothing was started" in page.content.decode()
        assert Run.objects.count() == 1
