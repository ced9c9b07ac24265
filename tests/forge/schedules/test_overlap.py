"""What a due time does while a run its schedule started is still in flight: skip, queue_one, cancel_running.

Transactional database: runs start and advance on commit (django-q2 sync), as on a cluster; the workflow
waits for a person's approval, so its run stays in flight until someone decides.
"""

import pytest

from forge.audit.models import AuditEvent
from forge.runs import services as runs
from forge.runs.models import Approval, Run
from forge.schedules import services
from forge.schedules.firing import due_schedules_exist, fire_due_schedules
from forge.schedules.models import ScheduleFire
from tests.forge.schedules.conftest import utc

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

FIRST, SECOND, THIRD = utc(2030, 1, 14, 10, 10), utc(2030, 1, 14, 10, 20), utc(2030, 1, 14, 10, 30)


def approve(run: Run, approver) -> Run:
    runs.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="approve")
    run.refresh_from_db()
    return run


def fires(schedule) -> list[tuple]:
    return list(ScheduleFire.objects.filter(schedule=schedule).order_by("due_at")
                .values_list("due_at", "status", "run_id"))


def test_skip_starts_nothing_while_its_run_waits_and_starts_again_once_it_has_ended(
        add_schedule, sign_off, approver):
    schedule = add_schedule(sign_off, overlap="skip")
    fire_due_schedules(now=FIRST)
    first = Run.objects.get()
    assert first.status == "running"
    assert fire_due_schedules(now=SECOND) == {"overlap": 1}
    assert Run.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.last_dispatch_status == "overlap"
    assert f"run {first.pk} it started is still in flight (overlap: skip)" in schedule.last_dispatch_detail
    assert approve(first, approver).status == "completed"
    assert fire_due_schedules(now=THIRD) == {"dispatched": 1}
    assert fires(schedule) == [(FIRST, "dispatched", first.pk), (SECOND, "overlap", None),
                               (THIRD, "dispatched", Run.objects.latest("id").pk)]


def test_queue_one_keeps_one_due_time_and_starts_it_when_the_run_in_flight_ends(add_schedule, sign_off, approver):
    schedule = add_schedule(sign_off, overlap="queue_one")
    fire_due_schedules(now=FIRST)
    first = Run.objects.get()
    assert fire_due_schedules(now=SECOND) == {"queued": 1}
    assert fire_due_schedules(now=THIRD) == {"overlap": 1}  # one is queued already
    schedule.refresh_from_db()
    assert (schedule.queued_due_at, schedule.last_dispatch_status) == (SECOND, "overlap")
    assert "already waits" in schedule.last_dispatch_detail
    assert Run.objects.count() == 1
    later = utc(2030, 1, 14, 10, 35)
    assert not due_schedules_exist(later)  # the run is still in flight
    assert fire_due_schedules(now=later) == {}

    assert approve(first, approver).status == "completed"
    assert due_schedules_exist(later)
    assert fire_due_schedules(now=later) == {"dispatched": 1}
    second = Run.objects.latest("id")
    assert second.status == "running"
    schedule.refresh_from_db()
    assert (schedule.queued_due_at, schedule.last_run) == (None, second)
    assert fires(schedule) == [(FIRST, "dispatched", first.pk), (SECOND, "dispatched", second.pk),
                               (THIRD, "overlap", None)]
    assert [e.detail["status"] for e in AuditEvent.objects.filter(code__startswith="forge.schedule.")
            .exclude(code="forge.schedule.added")] == ["dispatched", "queued", "overlap", "dispatched"]
    assert fire_due_schedules(now=later) == {}


def test_pausing_drops_the_queued_due_time(add_schedule, sign_off, approver, operator):
    schedule = add_schedule(sign_off, overlap="queue_one")
    fire_due_schedules(now=FIRST)
    fire_due_schedules(now=SECOND)
    services.schedule_pause(user=operator, schedule=schedule)
    approve(Run.objects.get(), approver)
    assert fire_due_schedules(now=THIRD) == {}
    assert Run.objects.count() == 1
    assert fires(schedule)[1][:2] == (SECOND, "dropped")


def test_cancel_running_cancels_the_run_in_flight_then_starts_a_new_one(add_schedule, sign_off, operator):
    schedule = add_schedule(sign_off, overlap="cancel_running")
    fire_due_schedules(now=FIRST)
    first = Run.objects.get()
    assert fire_due_schedules(now=SECOND) == {"dispatched": 1}
    first.refresh_from_db()
    assert (first.status, first.error_code) == ("cancelled", "run_cancelled")
    second = Run.objects.latest("id")
    assert second.pk != first.pk and second.status == "running"
    cancel = AuditEvent.objects.get(code="forge.run.cancel_requested", run_id=first.pk)
    assert cancel.actor == operator.username and f"schedule {schedule.pk}" in cancel.detail["reason"]
    schedule.refresh_from_db()
    assert schedule.last_dispatch_detail == (f"started run {second.pk} of needs_sign_off v1 "
                                             f"after cancelling run {first.pk}")
    assert fires(schedule) == [(FIRST, "dispatched", first.pk), (SECOND, "dispatched", second.pk)]
