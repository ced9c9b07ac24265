"""Firing due schedules: each due time at most once, however many callers, never a burst of missed runs,
and cron times read on the schedule's own wall clock."""

import pytest

from forge.audit.models import AuditEvent
from forge.runs.models import Run
from forge.schedules.firing import due_schedules_exist, fire_due_schedules
from forge.schedules.models import ScheduleFire
from tests.forge.conftest import fast_forward
from tests.forge.schedules.conftest import utc

pytestmark = pytest.mark.django_db

DUE = utc(2030, 1, 14, 10, 10)


class TestADueSchedule:
    def test_a_new_schedule_first_falls_due_at_its_next_cron_time(self, add_schedule, report):
        schedule = add_schedule(report)
        assert schedule.next_fire_at == DUE

    def test_nothing_fires_before_the_due_time(self, add_schedule, report):
        add_schedule(report)
        early = utc(2030, 1, 14, 10, 9, 59)
        assert not due_schedules_exist(early)
        assert fire_due_schedules(now=early) == {}
        assert not Run.objects.exists()

    def test_it_starts_one_run_of_the_latest_version_as_its_owner_with_its_arguments(
            self, add_schedule, report, operator):
        schedule = add_schedule(report)
        assert due_schedules_exist(DUE)
        assert fire_due_schedules(now=DUE) == {"dispatched": 1}
        run = Run.objects.get()
        assert run.version == report.latest_version()
        assert run.args == {"region": "eu", "copies": 1}
        assert run.started_by == operator
        fire = ScheduleFire.objects.get()
        assert (fire.schedule, fire.due_at, fire.status, fire.run) == (schedule, DUE, "dispatched", run)
        schedule.refresh_from_db()
        assert (schedule.last_dispatch_status, schedule.last_dispatch_at, schedule.last_run) == (
            "dispatched", DUE, run)
        assert f"started run {run.pk}" in schedule.last_dispatch_detail
        assert schedule.next_fire_at == utc(2030, 1, 14, 10, 20)
        event = AuditEvent.objects.get(code="forge.schedule.dispatched")
        assert (event.target, event.run_id, event.detail["due_at"]) == (
            f"schedule:{schedule.pk}", run.pk, DUE.isoformat())

    def test_firing_twice_for_the_same_time_creates_one_run(self, add_schedule, report):
        add_schedule(report)
        assert fire_due_schedules(now=DUE) == {"dispatched": 1}
        assert fire_due_schedules(now=DUE) == {}
        assert not due_schedules_exist(DUE)
        assert Run.objects.count() == 1
        assert ScheduleFire.objects.count() == 1

    def test_a_second_cluster_that_finds_the_due_time_claimed_starts_no_run(self, add_schedule, report):
        schedule = add_schedule(report)
        ScheduleFire.objects.create(schedule=schedule, due_at=DUE, status="dispatched")  # the other cluster
        assert fire_due_schedules(now=DUE) == {"already_fired": 1}
        assert not Run.objects.exists()
        schedule.refresh_from_db()
        assert schedule.next_fire_at == utc(2030, 1, 14, 10, 20)
        assert schedule.last_dispatch_status == ""

    def test_a_clock_that_was_stopped_for_an_hour_fires_once_then_at_the_next_future_time(
            self, add_schedule, report):
        schedule = add_schedule(report)
        late = utc(2030, 1, 14, 11, 15)
        assert fire_due_schedules(now=late) == {"dispatched": 1}
        assert fire_due_schedules(now=late) == {}
        schedule.refresh_from_db()
        assert schedule.next_fire_at == utc(2030, 1, 14, 11, 20)
        assert fast_forward(Run.objects.get()).status == "completed"
        assert fire_due_schedules(now=utc(2030, 1, 14, 11, 20)) == {"dispatched": 1}
        assert list(ScheduleFire.objects.order_by("due_at").values_list("due_at", flat=True)) == [
            DUE, utc(2030, 1, 14, 11, 20)]

    def test_each_due_schedule_fires_in_the_same_call(self, add_schedule, report, sign_off):
        add_schedule(report)
        add_schedule(sign_off)
        assert fire_due_schedules(now=DUE) == {"dispatched": 2}
        assert sorted(Run.objects.values_list("workflow__name", flat=True)) == ["needs_sign_off",
                                                                               "nightly_report"]

    def test_the_clock_s_check_for_due_schedules_is_one_query(self, add_schedule, report, sign_off,
                                                              django_assert_num_queries):
        add_schedule(report)
        add_schedule(sign_off, overlap="queue_one")
        with django_assert_num_queries(1):
            assert due_schedules_exist(DUE)
        with django_assert_num_queries(1):
            assert not due_schedules_exist(DUE.replace(minute=9))

    def test_a_paused_schedule_does_not_fire(self, add_schedule, report):
        add_schedule(report, enabled=False)
        assert not due_schedules_exist(DUE)
        assert fire_due_schedules(now=utc(2030, 1, 15)) == {}
        assert not Run.objects.exists()


class TestTimeZones:
    def test_nine_in_berlin_is_eight_utc_in_winter(self, add_schedule, report):
        schedule = add_schedule(report, cron="0 9 * * *", timezone="Europe/Berlin", now=utc(2030, 1, 14, 12))
        assert schedule.next_fire_at == utc(2030, 1, 15, 8)
        assert fire_due_schedules(now=utc(2030, 1, 15, 7, 59)) == {}
        assert fire_due_schedules(now=utc(2030, 1, 15, 8)) == {"dispatched": 1}

    def test_nine_in_berlin_is_seven_utc_in_summer(self, add_schedule, report):
        schedule = add_schedule(report, cron="0 9 * * *", timezone="Europe/Berlin", now=utc(2030, 7, 15, 12))
        assert schedule.next_fire_at == utc(2030, 7, 16, 7)
        assert fire_due_schedules(now=utc(2030, 7, 16, 7)) == {"dispatched": 1}

    def test_over_the_spring_change_the_same_wall_time_comes_an_hour_earlier_in_utc(self, add_schedule, report):
        # Central European Summer Time begins on Sunday 31 March 2030.
        schedule = add_schedule(report, cron="0 9 * * *", timezone="Europe/Berlin", now=utc(2030, 3, 29, 12))
        assert schedule.next_fire_at == utc(2030, 3, 30, 8)
        fire_due_schedules(now=utc(2030, 3, 30, 8))
        fast_forward(Run.objects.get())
        schedule.refresh_from_db()
        assert schedule.next_fire_at == utc(2030, 3, 31, 7)
        fire_due_schedules(now=utc(2030, 3, 31, 7))
        assert list(ScheduleFire.objects.order_by("due_at").values_list("due_at", "status")) == [
            (utc(2030, 3, 30, 8), "dispatched"), (utc(2030, 3, 31, 7), "dispatched")]

    def test_over_the_autumn_change_a_time_of_day_fires_once_though_its_hour_repeats(self, add_schedule, report):
        # Clocks go back from 03:00 CEST to 02:00 CET on Sunday 27 October 2030: 02:30 happens twice.
        schedule = add_schedule(report, cron="30 2 * * *", timezone="Europe/Berlin", now=utc(2030, 10, 26, 12))
        assert schedule.next_fire_at == utc(2030, 10, 27, 0, 30)  # 02:30 CEST
        fire_due_schedules(now=utc(2030, 10, 27, 0, 30))
        fast_forward(Run.objects.get())
        schedule.refresh_from_db()
        assert schedule.next_fire_at == utc(2030, 10, 28, 1, 30)  # not 02:30 CET the same night

    def test_over_the_autumn_change_an_every_twenty_minutes_schedule_goes_on_by_elapsed_time(
            self, add_schedule, report):
        schedule = add_schedule(report, cron="*/20 * * * *", timezone="Europe/Berlin",
                                now=utc(2030, 10, 27, 0, 30))
        assert schedule.next_fire_at == utc(2030, 10, 27, 0, 40)  # 02:40 CEST
        fire_due_schedules(now=utc(2030, 10, 27, 0, 40))
        fast_forward(Run.objects.get())
        schedule.refresh_from_db()
        assert schedule.next_fire_at == utc(2030, 10, 27, 1, 0)  # 02:00 CET, twenty minutes later
