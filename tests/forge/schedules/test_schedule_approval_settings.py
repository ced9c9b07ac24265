"""Saying that a schedule requires approval, and who approves: the service (approvers must be existing groups),
`forge schedule add --require-approval --approver`, the listing, and the admin's form; each change audited, bad
input refused with nothing changed."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.schedules import services
from forge.schedules.models import Schedule
from tests.forge.admin_pages import staff
from tests.forge.test_forge_command import run_command as forge

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def finance(db):
    return Group.objects.get_or_create(name="Finance")[0]


def test_a_schedule_that_requires_approval_keeps_its_approvers_and_the_audit_says_so(add_schedule, report):
    schedule = add_schedule(report, require_approval=True, approvers=["Finance", " Approvers", "Finance"])
    assert (schedule.require_approval, schedule.approvers) == (True, ["Approvers", "Finance"])
    detail = AuditEvent.objects.get(code="forge.schedule.added").detail
    assert (detail["require_approval"], detail["approvers"]) == (True, ["Approvers", "Finance"])


@pytest.mark.parametrize("approvers, says", [
    (["Finanse"], "there is no group 'Finanse'; the groups are Admins, Approvers, Finance, Operators"),
    ("Finance", "must be a list of group names"),
    ([3], "each approver is a group's name"),
    ([""], "cannot be empty"),
    ([f"g{i}" for i in range(21)], "at most 20 groups"),
    (["x" * 5000], "there is no group"),
    (["Finance'; DROP TABLE auth_group; --"], "there is no group"),
], ids=["unknown", "text", "number", "empty", "too-many", "huge", "hostile"])
def test_approvers_that_are_not_existing_groups_are_refused_and_nothing_is_saved(add_schedule, report, approvers,
                                                                                says):
    with pytest.raises(services.ScheduleRejected, match=says) as refused:
        add_schedule(report, require_approval=True, approvers=approvers)
    assert refused.value.field == "approvers"
    assert not Schedule.objects.exists() and not AuditEvent.objects.filter(code="forge.schedule.added").exists()
    assert len(str(refused.value)) < 1000


def test_changing_whether_it_requires_approval_is_audited_before_and_after(add_schedule, report, operator):
    schedule = add_schedule(report)
    services.schedule_update(user=operator, schedule=schedule, require_approval=True, approvers=["Finance"])
    schedule.refresh_from_db()
    assert (schedule.require_approval, schedule.approvers) == (True, ["Finance"])
    detail = AuditEvent.objects.get(code="forge.schedule.changed").detail
    assert detail == {"before": {"approvers": [], "require_approval": False},
                      "after": {"approvers": ["Finance"], "require_approval": True}}
    with pytest.raises(services.ScheduleRejected, match="no group 'Nobody'"):
        services.schedule_update(user=operator, schedule=schedule, approvers=["Nobody"])
    schedule.refresh_from_db()
    assert schedule.approvers == ["Finance"]


def add(*more: str) -> tuple[int, str, str]:
    return forge("--user", "olive", "schedule", "add", "nightly_report", "--cron", "0 9 * * 1-5", "--arg",
                 "region=eu", *more)


def test_the_cli_adds_a_schedule_that_requires_approval_and_lists_it(report, operator):
    code, out, err = add("--require-approval", "--approver", "Finance")
    assert code == 0, err
    assert "each run waits for approval by Finance before its first step" in out
    schedule = Schedule.objects.get()
    assert (schedule.require_approval, schedule.approvers) == (True, ["Finance"])
    assert add()[0] == 0
    code, out, _ = forge("schedules")
    lines = out.splitlines()
    assert "approval by Finance" in lines[0] and "no approval" in lines[1]
    code, out, _ = forge("schedules", "--json")
    assert '"require_approval": true, "approvers": ["Finance"]' in out


def test_the_cli_defaults_to_approvers_and_refuses_bad_approver_options(report, operator):
    assert "approval by Approvers" in add("--require-approval")[1]
    code, _, err = add("--approver", "Finance")
    assert code == 2 and "give --require-approval too" in err
    code, _, err = add("--require-approval", "--approver", "Nobody")
    assert code == 2 and "there is no group 'Nobody'" in err
    assert Schedule.objects.count() == 1


def url(view: str = "changelist", *args) -> str:
    return reverse(f"admin:forge_schedules_schedule_{view}", args=args)


def form(workflow, **more) -> dict:
    return {"workflow": workflow.pk, "cron": "0 9 * * 1-5", "timezone": "UTC", "args": '{"region": "eu"}',
            "overlap": "skip", "enabled": "on", **more}


def test_the_admin_form_sets_require_approval_and_ticks_existing_groups(client, report):
    client.force_login(staff("adele", "Admins"))
    page = client.get(url("add")).content.decode()
    assert 'name="require_approval"' in page and 'value="Finance"' in page and 'value="Operators"' in page
    response = client.post(url("add"), form(report, require_approval="on", approvers=["Finance"]))
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = Schedule.objects.get()
    assert (schedule.require_approval, schedule.approvers) == (True, ["Finance"])
    assert "by Finance" in client.get(url()).content.decode()
    response = client.post(url("change", schedule.pk), form(report))  # both unticked
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.require_approval, schedule.approvers) == (False, [])
    assert AuditEvent.objects.get(code="forge.schedule.changed").detail["after"] == {
        "approvers": [], "require_approval": False}


def test_the_admin_form_refuses_a_group_that_is_not_one(client, report):
    client.force_login(staff("adele", "Admins"))
    response = client.post(url("add"), form(report, require_approval="on", approvers=["Nobody"]))
    assert response.status_code == 200
    assert "approvers" in response.context["adminform"].form.errors
    assert not Schedule.objects.exists()
