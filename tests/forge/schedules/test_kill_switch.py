"""The kill switch: while engaged no schedule starts a run; lifting it resumes each at its next future cron
time, never with a burst of the runs that were missed."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied

from forge.audit.models import AuditEvent
from forge.runs.models import Run
from forge.schedules import services
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import ScheduleFire
from forge.schedules.selectors import kill_switch
from tests.forge.schedules.conftest import MONDAY, utc

pytestmark = pytest.mark.django_db


def test_it_stops_every_schedule(add_schedule, report, sign_off, admin_user):
    add_schedule(report)
    add_schedule(sign_off, cron="@hourly")
    services.kill_switch_set(user=admin_user, engaged=True, reason="provider outage")
    assert fire_due_schedules(now=utc(2030, 1, 14, 11, 0, 5)) == {"kill_switch": 2}
    assert not Run.objects.exists()
    assert set(ScheduleFire.objects.values_list("status", flat=True)) == {"kill_switch"}


@pytest.mark.parametrize("ticks_while_engaged", [True, False], ids=["clock-ticking", "clock-stopped"])
def test_lifting_it_starts_no_missed_run_and_fires_again_at_the_next_due_time(
        add_schedule, report, admin_user, ticks_while_engaged):
    schedule = add_schedule(report)  # every ten minutes from 10:10
    services.kill_switch_set(user=admin_user, engaged=True, now=MONDAY)
    if ticks_while_engaged:
        for minute in range(10, 70, 5):  # an hour of ticks with the switch on
            fire_due_schedules(now=MONDAY + timedelta(minutes=minute))
    lifted = utc(2030, 1, 14, 11, 15)
    services.kill_switch_set(user=admin_user, engaged=False, now=lifted)
    schedule.refresh_from_db()
    assert schedule.next_fire_at == utc(2030, 1, 14, 11, 20)
    assert fire_due_schedules(now=lifted) == {}
    assert fire_due_schedules(now=lifted + timedelta(minutes=4)) == {}
    assert not Run.objects.exists()
    assert fire_due_schedules(now=utc(2030, 1, 14, 11, 20)) == {"dispatched": 1}
    assert Run.objects.count() == 1


def test_engaging_and_lifting_are_audited_with_who_and_why(admin_user):
    services.kill_switch_set(user=admin_user, engaged=True, reason="incident 42")
    switch = kill_switch()
    assert (switch.engaged, switch.reason, switch.changed_by) == (True, "incident 42", admin_user)
    services.kill_switch_set(user=admin_user, engaged=False, reason="resolved")
    assert [(e.code, e.actor, e.detail["reason"]) for e in AuditEvent.objects.filter(target="killswitch")] == [
        ("forge.killswitch.engaged", "adam", "incident 42"), ("forge.killswitch.lifted", "adam", "resolved")]
    assert not kill_switch().engaged


def test_it_is_off_until_someone_engages_it(db):
    assert not kill_switch().engaged


def test_engaging_it_twice_is_refused_and_changes_nothing(admin_user):
    services.kill_switch_set(user=admin_user, engaged=True, reason="first")
    with pytest.raises(services.ScheduleRejected, match="already engaged"):
        services.kill_switch_set(user=admin_user, engaged=True, reason="second")
    assert kill_switch().reason == "first"
    assert AuditEvent.objects.filter(target="killswitch").count() == 1


@pytest.mark.parametrize("who", ["operator", "approver", "outsider"])
def test_only_admins_may_engage_it(request, who):
    with pytest.raises(PermissionDenied):
        services.kill_switch_set(user=request.getfixturevalue(who), engaged=True)
    assert not kill_switch().engaged
    assert not AuditEvent.objects.exists()
