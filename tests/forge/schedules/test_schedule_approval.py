"""A schedule that requires approval (spec 15, seed 004's dispatch with an approval gate): each due time starts
its run held before its first step, in the inbox of the schedule's approvers, naming the schedule; approve and
the steps run, reject and the run ends cancelled (`start_rejected`).

Transactional database: runs start and advance on commit (django-q2 sync), as on a cluster.
"""

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.runs.reads.inbox import inbox_for_user
from forge.runs.reads.run_view import held_words, run_view
from forge.runs import services as runs
from forge.runs.models import Approval, Run, RunInput, StepResult
from forge.runs.selectors import is_paused, run_report
from forge.runtime import bridge
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import Schedule
from tests.forge.conftest import member
from tests.forge.schedules.conftest import utc
from tests.forge.test_forge_command import run_command as forge

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

DUE = utc(2030, 1, 14, 10, 10)


@pytest.fixture
def finance(db):
    Group.objects.get_or_create(name="Finance")
    return member("fiona", "Approvers", "Finance")  # a group of the console, to see runs at all


def held_run(add_schedule, report, **more) -> tuple[Schedule, Run, Approval]:
    schedule = add_schedule(report, require_approval=True, **more)
    assert fire_due_schedules(now=DUE) == {"dispatched": 1}
    run = Run.objects.get()
    return schedule, run, Approval.objects.get(run=run)


def steps(run: Run) -> dict[str, str]:
    return dict(StepResult.objects.filter(run=run).values_list("step", "status"))


def test_a_due_time_starts_the_run_held_with_a_pending_start_approval_naming_the_schedule(
        add_schedule, report, operator):
    schedule, run, approval = held_run(add_schedule, report, cron="*/10 * * * *")
    assert run.status == "running" and steps(run) == {"build": "pending"}
    assert (approval.kind, approval.step, approval.status, approval.options) == ("start", "", "pending",
                                                                                 ["approve", "reject"])
    assert approval.approvers == []  # Approvers decide
    for words in (f"Schedule #{schedule.pk}", "workflow nightly_report", "cron */10 * * * * in UTC", "owner olive",
                  "due time 2030-01-14 10:10 UTC"):
        assert words in approval.message
    assert is_paused(run)
    assert held_words([run.pk]) == {run.pk: f"waiting for approval to start (schedule #{schedule.pk})"}
    assert [node.why for node in run_view(run).nodes] == [f"waiting for approval to start (schedule #{schedule.pk})"]
    schedule.refresh_from_db()
    assert "held before its first step for approval by Approvers" in schedule.last_dispatch_detail
    assert AuditEvent.objects.filter(code="forge.approval.requested", run_id=run.pk,
                                     detail__kind="start").exists()


def test_the_inbox_shows_the_schedule_to_its_approvers_only(add_schedule, report, operator, approver, finance):
    schedule, run, approval = held_run(add_schedule, report, approvers=["Finance"])
    (item,) = inbox_for_user(finance)
    assert item.start is not None and item.start.schedule == schedule
    assert (item.start.who, item.start.args) == ("Finance", [("copies", "1"), ("region", '"eu"')])
    assert inbox_for_user(approver) == []  # the schedule names Finance
    assert approval.approvers == ["Finance"]


def test_approving_the_start_runs_the_steps_and_is_audited_in_the_approvers_name(
        add_schedule, report, operator, approver):
    _, run, approval = held_run(add_schedule, report)
    runs.approval_decide(user=approver, approval=approval, decision="approve", comment="go")
    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == "completed" and steps(run) == {"build": "completed"}
    assert (approval.status, approval.decided_by) == ("approved", approver)
    event = AuditEvent.objects.get(code="forge.approval.approved", run_id=run.pk)
    assert (event.actor, event.detail["kind"]) == ("april", "start")


def test_rejecting_the_start_ends_the_run_cancelled_and_no_step_runs(add_schedule, report, operator, approver):
    _, run, approval = held_run(add_schedule, report)
    runs.approval_decide(user=approver, approval=approval, decision="reject")
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("cancelled", "start_rejected")
    assert "rejected by april" in run.error
    assert StepResult.objects.get(run=run).error_code == "start_rejected"
    assert StepResult.objects.get(run=run).started_at is None
    assert Approval.objects.get(run=run).status == "rejected"


@pytest.mark.parametrize("who, says", [
    ("operator", "needs a member of Finance"),  # the owner, not an approver either
    ("outsider", "you are in no group"),
    ("approver", "needs a member of Finance"),
])
def test_who_may_not_decide_is_refused_and_nothing_changes(request, add_schedule, report, operator, approver,
                                                           outsider, finance, who, says):
    _, run, approval = held_run(add_schedule, report, approvers=["Finance"])
    inputs = RunInput.objects.count()
    with pytest.raises(PermissionDenied, match=says):
        runs.approval_decide(user=request.getfixturevalue(who), approval=approval, decision="approve")
    assert RunInput.objects.count() == inputs and Approval.objects.get(run=run).status == "pending"


def test_the_owner_may_not_approve_their_own_schedule_s_run_unless_self_approval_is_allowed(
        add_schedule, report, admin_user, settings):
    _, run, approval = held_run(add_schedule, report, user=admin_user)  # an Admin may approve anything else
    with pytest.raises(PermissionDenied, match="self-approval is not allowed"):
        runs.approval_decide(user=admin_user, approval=approval, decision="approve")
    settings.FORGE_ALLOW_SELF_APPROVAL = True
    runs.approval_decide(user=admin_user, approval=approval, decision="approve")
    run.refresh_from_db()
    assert run.status == "completed"


def test_cancelling_a_held_run_expires_its_start_approval(add_schedule, report, operator):
    _, run, approval = held_run(add_schedule, report)
    runs.run_cancel(user=operator, run=run)
    run.refresh_from_db()
    approval.refresh_from_db()
    assert (run.status, approval.status) == ("cancelled", "expired")


def test_a_schedule_without_require_approval_starts_its_run_at_once(add_schedule, report, operator):
    add_schedule(report)
    fire_due_schedules(now=DUE)
    assert Run.objects.get().status == "completed" and not Approval.objects.exists()


def test_the_cli_lists_and_approves_a_held_start_without_a_step(add_schedule, report, operator, approver):
    _, run, _ = held_run(add_schedule, report)
    code, out, _ = forge("--user", "april", "approvals")
    assert code == 0 and f"run {run.pk} nightly_report (start): Schedule #" in out
    assert f"[forge approve|reject {run.pk}]" in out
    code, out, err = forge("--user", "olive", "approve", str(run.pk))
    assert code == 4 and "not an approver" in err  # refused (forge.errors.EXIT_REFUSED)
    code, out, _ = forge("--user", "april", "approve", str(run.pk), "--comment", "fine")
    assert (code, out.strip()) == (0, f"run {run.pk} / start: approve")
    run.refresh_from_db()
    assert run.status == "completed"
    code, _, err = forge("--user", "april", "reject", str(run.pk))
    assert code == 2 and "is not held before its start" in err


def test_the_cli_rejects_a_held_start(add_schedule, report, operator, approver):
    _, run, _ = held_run(add_schedule, report)
    assert forge("--user", "april", "reject", str(run.pk))[0] == 0
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("cancelled", "start_rejected")


def test_the_console_pages_show_the_hold_and_an_approver_approves_from_the_inbox(
        client, add_schedule, report, operator, approver):
    schedule, run, approval = held_run(add_schedule, report)
    client.force_login(approver)
    inbox = client.get(reverse("console:approvals")).content.decode()
    assert 'data-kind="start"' in inbox and f"schedule #{schedule.pk}</a>" in inbox
    assert "<code>*/10 * * * *</code> in UTC" in inbox and "olive" in inbox
    listed = client.get(reverse("console:workflow", args=["nightly_report"])).content.decode()
    assert f"schedule #{schedule.pk}: <code>" in listed and "each run waits for approval by Approvers" in listed
    sentence = f"waiting for approval to start (schedule #{schedule.pk})"
    assert sentence in client.get(reverse("console:runs")).content.decode()
    page = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert sentence in page and "Scheduled run&#x27;s start: no step runs until it is approved" in page
    said = client.post(reverse("console:decide", args=[approval.pk]), {"decision": "approve", "comment": ""},
                       follow=True).content.decode()
    assert f"You approved the start in run {run.pk}." in said
    run.refresh_from_db()
    assert run.status == "completed"
    assert 'data-kind="start"' not in client.get(reverse("console:approvals")).content.decode()


def test_a_worker_that_rebuilds_the_held_run_from_its_checkpoint_and_log_finds_it_held(
        add_schedule, report, operator, approver):
    _, run, approval = held_run(add_schedule, report)
    bridge.forget(run.pk)  # as after a crash: the next round restores the run from the database
    replica = bridge.replica(run)
    assert [a["kind"] for a in replica.pending_approvals] == ["start"]
    assert run_report(run)["status"] == "paused"
    runs.approval_decide(user=approver, approval=approval, decision="approve")
    run.refresh_from_db()
    assert run.status == "completed"
