"""Adding, changing, pausing, resuming and deleting schedules: permission, audit, and bad input refused with
nothing changed."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied

from forge.audit.models import AuditEvent
from forge.runs.models import Run
from forge.schedules import services
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import Schedule
from tests.forge.schedules.conftest import MONDAY, utc

pytestmark = pytest.mark.django_db


def events(code: str):
    return AuditEvent.objects.filter(code=code)


class TestAdd:
    def test_an_operator_adds_a_schedule_they_own_and_it_is_audited(self, add_schedule, report, operator):
        schedule = add_schedule(report, cron="0 9 * * 1-5", timezone="Europe/Berlin", overlap="queue_one")
        assert (schedule.owner, schedule.enabled, schedule.args) == (operator, True, {"region": "eu"})
        (event,) = events("forge.schedule.added")
        assert (event.actor, event.target) == ("olive", f"schedule:{schedule.pk}")
        assert event.detail["cron"] == "0 9 * * 1-5" and event.detail["overlap"] == "queue_one"
        assert event.detail["next_fire_at"] == utc(2030, 1, 15, 8).isoformat()

    def test_arguments_given_as_text_are_kept_with_their_declared_types(self, add_schedule, report):
        schedule = add_schedule(report, args={"region": "eu", "copies": "3"}, args_from_text=True)
        assert schedule.args == {"region": "eu", "copies": 3}

    def test_an_admin_may_add_one_too(self, add_schedule, report, admin_user):
        assert add_schedule(report, user=admin_user).owner == admin_user

    @pytest.mark.parametrize("who", ["approver", "outsider"])
    def test_people_who_may_not_manage_schedules_are_refused(self, request, add_schedule, report, who):
        audited = AuditEvent.objects.count()
        with pytest.raises(PermissionDenied, match="you may not manage schedules"):
            add_schedule(report, user=request.getfixturevalue(who))
        assert not Schedule.objects.exists() and AuditEvent.objects.count() == audited

    @pytest.mark.parametrize("change, says", [
        ({"cron": "61 * * * *"}, "not a usable cron expression"),
        ({"cron": "every day"}, "not a cron expression of five fields"),
        ({"cron": "0 0 9 * * *"}, "not a cron expression of five fields"),  # croniter's seconds field
        ({"cron": "0 0 31 2 *"}, "not a usable cron expression"),  # never matches
        ({"cron": "0 9 * * " + ",".join(["1"] * 60)}, "at most 120 characters"),
        ({"timezone": "Mars/Olympus"}, "not a known IANA time zone"),
        ({"timezone": "../../etc/passwd"}, "not a known IANA time zone"),
        ({"workflow": "no_such_flow"}, "there is no workflow 'no_such_flow'"),
        ({"args": {"region": "eu", "colour": "red"}}, "argument 'colour' is not declared"),
        ({"args": {}}, "argument 'region' is required"),
        ({"args": {"region": "eu", "copies": "many"}}, "copies"),
        ({"args": ["eu"]}, "must be a JSON object"),
        ({"overlap": "sometimes"}, "choose one of skip, queue_one, cancel_running"),
    ], ids=lambda value: str(value)[:30])
    def test_bad_input_is_refused_with_a_clear_message_and_nothing_changes(self, report, operator, change,
                                                                           says):
        audited = AuditEvent.objects.count()
        given = {"workflow": report, "cron": "*/10 * * * *", "args": {"region": "eu"}, **change}
        with pytest.raises(services.ScheduleRejected, match=says):
            services.schedule_add(user=operator, now=MONDAY, **given)
        assert not Schedule.objects.exists() and AuditEvent.objects.count() == audited


class TestPauseAndResume:
    def test_a_paused_schedule_has_no_next_fire_and_is_audited(self, add_schedule, report, operator):
        schedule = services.schedule_pause(user=operator, schedule=add_schedule(report))
        assert (schedule.enabled, schedule.next_fire_at) == (False, None)
        assert events("forge.schedule.paused").get().target == f"schedule:{schedule.pk}"
        with pytest.raises(services.ScheduleRejected, match="already paused"):
            services.schedule_pause(user=operator, schedule=schedule)

    def test_resuming_fires_from_the_next_cron_time_after_now_without_the_missed_runs(
            self, add_schedule, report, operator):
        schedule = add_schedule(report)
        services.schedule_pause(user=operator, schedule=schedule, now=MONDAY + timedelta(minutes=5))
        resumed_at = utc(2030, 1, 14, 13, 2)
        schedule = services.schedule_resume(user=operator, schedule=schedule, now=resumed_at)
        assert schedule.next_fire_at == utc(2030, 1, 14, 13, 10)
        assert events("forge.schedule.resumed").get().detail["next_fire_at"] == schedule.next_fire_at.isoformat()
        assert fire_due_schedules(now=resumed_at) == {}
        assert fire_due_schedules(now=utc(2030, 1, 14, 13, 10)) == {"dispatched": 1}
        assert Run.objects.count() == 1

    def test_resuming_a_schedule_that_is_not_paused_is_refused(self, add_schedule, report, operator):
        with pytest.raises(services.ScheduleRejected, match="is not paused"):
            services.schedule_resume(user=operator, schedule=add_schedule(report))
        assert not events("forge.schedule.resumed").exists()

    def test_an_outsider_may_not_pause_one(self, add_schedule, report, outsider):
        schedule = add_schedule(report)
        with pytest.raises(PermissionDenied):
            services.schedule_pause(user=outsider, schedule=schedule)
        schedule.refresh_from_db()
        assert schedule.enabled


class TestUpdateAndDelete:
    def test_changing_the_cron_moves_the_next_fire_and_makes_the_editor_the_owner(
            self, add_schedule, report, admin_user):
        schedule = add_schedule(report)
        schedule = services.schedule_update(user=admin_user, schedule=schedule, cron="0 12 * * *",
                                            now=MONDAY)
        assert (schedule.next_fire_at, schedule.owner) == (utc(2030, 1, 14, 12), admin_user)
        (event,) = events("forge.schedule.changed")
        assert event.detail == {"before": {"cron": "*/10 * * * *", "owner": "olive"},
                                "after": {"cron": "0 12 * * *", "owner": "adam"}}

    def test_a_bad_change_is_refused_and_changes_nothing(self, add_schedule, report, operator):
        schedule = add_schedule(report)
        with pytest.raises(services.ScheduleRejected, match="time zone"):
            services.schedule_update(user=operator, schedule=schedule, cron="@daily", timezone="Nowhere")
        schedule.refresh_from_db()
        assert (schedule.cron, schedule.timezone) == ("*/10 * * * *", "UTC")
        assert not events("forge.schedule.changed").exists()

    def test_deleting_one_keeps_its_runs_and_audits_what_it_held(self, add_schedule, report, operator):
        schedule = add_schedule(report)
        fire_due_schedules(now=utc(2030, 1, 14, 10, 10))
        services.schedule_delete(user=operator, schedule=schedule)
        assert not Schedule.objects.exists()
        assert Run.objects.count() == 1
        (event,) = events("forge.schedule.deleted")
        assert event.detail["before"]["workflow"] == "nightly_report"

    def test_an_outsider_may_not_delete_one(self, add_schedule, report, outsider):
        schedule = add_schedule(report)
        with pytest.raises(PermissionDenied):
            services.schedule_delete(user=outsider, schedule=schedule)
        assert Schedule.objects.filter(pk=schedule.pk).exists()
