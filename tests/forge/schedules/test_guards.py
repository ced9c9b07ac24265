"""The guard clauses, in order: kill switch, budget, validation, (overlap: test_overlap.py), permission.
Each refusal is recorded on the fire record and the schedule, audited, and leaves no run behind."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group

from forge.audit.models import AuditEvent
from forge.governance.models import BudgetEnvelope, TokenEvent
from forge.runs.models import Run, RunInput
from forge.schedules import services
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import ScheduleFire
from tests.forge.schedules.conftest import REPORT, utc

pytestmark = pytest.mark.django_db

DUE = utc(2030, 1, 14, 10, 10)


def assert_refused(schedule, status: str, says: str) -> None:
    """What a person checks: the schedule's last status and why, its fire record, no run, one audit row."""
    schedule.refresh_from_db()
    assert schedule.last_dispatch_status == status
    assert says in schedule.last_dispatch_detail, schedule.last_dispatch_detail
    assert schedule.last_dispatch_at == DUE
    fire = ScheduleFire.objects.get(schedule=schedule)
    assert (fire.due_at, fire.status, fire.message, fire.run) == (DUE, status, schedule.last_dispatch_detail, None)
    assert not Run.objects.exists() and not RunInput.objects.exists()
    (event,) = AuditEvent.objects.filter(code="forge.schedule.refused")
    assert (event.target, event.detail["status"]) == (f"schedule:{schedule.pk}", status)
    assert schedule.next_fire_at == DUE + timedelta(minutes=10)  # refused, and on to the next time


def spend(amount: float, *, workflow: str = "nightly_report", reserved: float = 0.0, at=DUE) -> None:
    TokenEvent.objects.create(run_id=999, step="s", attempt=TokenEvent.objects.count() + 1, agent="mock",
                              workflow=workflow, cost=amount, reserved=reserved, settled=not reserved, at=at)


class TestKillSwitch:
    def test_an_engaged_kill_switch_refuses_with_who_engaged_it_and_why(self, add_schedule, report, admin_user):
        schedule = add_schedule(report)
        services.kill_switch_set(user=admin_user, engaged=True, reason="incident 42")
        assert fire_due_schedules(now=DUE) == {"kill_switch": 1}
        assert_refused(schedule, "kill_switch", "engaged by adam: incident 42")

    def test_it_is_checked_before_every_other_guard(self, add_schedule, report, admin_user):
        schedule = add_schedule(report)
        BudgetEnvelope.objects.create(name="none left", scope="org", limit=0)
        services.kill_switch_set(user=admin_user, engaged=True)
        fire_due_schedules(now=DUE)
        assert_refused(schedule, "kill_switch", "kill switch is engaged")

    def test_it_does_not_refuse_once_lifted(self, add_schedule, report, admin_user):
        add_schedule(report)
        services.kill_switch_set(user=admin_user, engaged=True)
        services.kill_switch_set(user=admin_user, engaged=False, now=DUE - timedelta(minutes=5))
        assert fire_due_schedules(now=DUE) == {"dispatched": 1}


class TestBudget:
    def test_an_org_budget_spent_to_its_limit_refuses(self, add_schedule, report):
        schedule = add_schedule(report)
        BudgetEnvelope.objects.create(name="org monthly", scope="org", limit=5.0)
        spend(5.0, workflow="another_flow")
        assert fire_due_schedules(now=DUE) == {"budget_exceeded": 1}
        assert_refused(schedule, "budget_exceeded", "budget 'org monthly' (org) has used 5.00 of its 5.00 limit")

    def test_open_reservations_count_against_a_workflow_budget(self, add_schedule, report):
        schedule = add_schedule(report)
        BudgetEnvelope.objects.create(name="reports", scope="workflow:nightly_report", limit=1.0)
        spend(0.5)
        spend(0.0, reserved=0.6)
        fire_due_schedules(now=DUE)
        assert_refused(schedule, "budget_exceeded", "0.60 of it reserved")

    def test_it_is_checked_before_validation(self, add_schedule, report, save_workflow):
        schedule = add_schedule(report)
        save_workflow(REPORT.replace("copies: {type: integer, default: 1}", "note: {type: string, required: true}"))
        BudgetEnvelope.objects.create(name="org monthly", scope="org", limit=1.0)
        spend(1.0)
        fire_due_schedules(now=DUE)
        assert_refused(schedule, "budget_exceeded", "org monthly")

    @pytest.mark.parametrize("envelope, spent_at", [
        ({"scope": "workflow:another_flow"}, DUE),          # covers another workflow
        ({"scope": "org", "enabled": False}, DUE),          # switched off
        ({"scope": "org"}, DUE - timedelta(days=31)),       # spent last month
        ({"scope": "org", "limit": 10.0}, DUE),             # still under its limit
    ], ids=["another-workflow", "disabled", "last-month", "under-limit"])
    def test_it_does_not_refuse_when_no_budget_covering_the_workflow_is_used_up(
            self, add_schedule, report, envelope, spent_at):
        add_schedule(report)
        BudgetEnvelope.objects.create(name="budget", **{"limit": 2.0, **envelope})
        spend(3.0, at=spent_at)
        assert fire_due_schedules(now=DUE) == {"dispatched": 1}


class TestValidation:
    def test_arguments_the_latest_version_no_longer_accepts_are_refused(self, add_schedule, report, save_workflow):
        schedule = add_schedule(report)
        save_workflow(REPORT.replace("copies: {type: integer, default: 1}", "note: {type: string, required: true}"))
        assert fire_due_schedules(now=DUE) == {"validation_failed": 1}
        assert_refused(schedule, "validation_failed", "argument 'note' is required")

    def test_a_cycle_of_workflow_references_is_refused_with_its_path(self, add_schedule, save_workflow):
        loop_a = save_workflow("name: loop_a\nsteps:\n  - id: call_b\n    workflow_ref: loop_b\n").workflow
        schedule = add_schedule(loop_a)
        save_workflow("name: loop_b\nsteps:\n  - id: call_a\n    workflow_ref: loop_a\n")
        fire_due_schedules(now=DUE)
        assert_refused(schedule, "validation_failed", "cycle: loop_a -> loop_b -> loop_a")

    def test_it_runs_the_latest_version(self, add_schedule, report, save_workflow):
        add_schedule(report)
        latest = save_workflow(REPORT.replace("build the report", "build the new report"))
        fire_due_schedules(now=DUE)
        assert Run.objects.get().version == latest


class TestOwnerPermission:
    def test_an_owner_no_longer_in_operators_is_refused(self, add_schedule, report, operator):
        schedule = add_schedule(report)
        operator.groups.remove(Group.objects.get(name="Operators"))
        assert fire_due_schedules(now=DUE) == {"not_permitted": 1}
        assert_refused(schedule, "not_permitted", "its owner olive may no longer start runs")

    def test_a_deactivated_owner_is_refused(self, add_schedule, report, operator):
        schedule = add_schedule(report)
        operator.is_active = False
        operator.save()
        fire_due_schedules(now=DUE)
        assert_refused(schedule, "not_permitted", "olive is deactivated")

    def test_a_schedule_the_system_added_always_may_start(self, add_schedule, report):
        add_schedule(report, user=None)
        assert fire_due_schedules(now=DUE) == {"dispatched": 1}
        assert Run.objects.get().started_by is None
