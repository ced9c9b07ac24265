"""What an attacker or a slip of the keyboard sends to schedules gets a message and changes nothing; the admin
deletes what it offers to delete; the kill switch waits for a decision already under way."""

import io
import threading

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.schedules import guards, services
from forge.schedules.firing import fire_due_schedules
from forge.schedules.models import Schedule, ScheduleFire
from tests.forge.admin_pages import staff
from tests.forge.schedules.conftest import utc

OBJECTS = """
name: takes_objects
args:
  meta: {type: object}
  n: {type: number}
steps:
  - {id: a, agent: mock, command: x, mock: {outputs: {done: true}}}
"""


def forge(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    try:
        call_command("forge", *argv, stdout=io.StringIO(), stderr=err)
    except SystemExit as exited:
        return exited.code, err.getvalue()
    return 0, err.getvalue()


@pytest.mark.django_db
class TestRefusedWithAMessage:
    @pytest.mark.parametrize("arg", ['meta={"x": NaN}', "n=1e999", 'meta={"x": [Infinity]}'])
    def test_a_number_json_cannot_carry(self, save_workflow, arg):
        save_workflow(OBJECTS)
        code, err = forge("schedule", "add", "takes_objects", "--cron", "0 9 * * *", "--arg", arg)
        assert (code, "not finite" in err) == (2, True), err
        assert not Schedule.objects.exists()

    @pytest.mark.parametrize("tz", ["a" * 300, "localtime", "posix/Europe/Berlin", "Factory"])
    def test_a_time_zone_that_is_not_an_iana_name(self, report, tz):
        code, err = forge("schedule", "add", "nightly_report", "--cron", "0 9 * * *", "--arg", "region=eu", "--tz", tz)
        assert (code, "not a known IANA time zone" in err) == (2, True), err
        assert not Schedule.objects.exists()

    @pytest.mark.parametrize("cron", ["R * * * *", "0 H * * *", "H(0-29) 9 * * *"])
    def test_random_or_hashed_cron_fields(self, report, cron):
        code, err = forge("schedule", "add", "nightly_report", "--cron", cron, "--arg", "region=eu")
        assert (code, "random (R) or hashed (H)" in err) == (2, True), err

    @pytest.mark.parametrize("args, says", [('{"n": Infinity}', "not finite"), ('{"meta": {"x": NaN}}', "not finite"),
                                            ("[" * 100000, "nest too deeply")])
    def test_admin_args_json_cannot_keep(self, client, save_workflow, args, says):
        workflow = save_workflow(OBJECTS).workflow
        client.force_login(staff("adele", "Admins"))
        page = client.post(reverse("admin:forge_schedules_schedule_add"),
                           {"workflow": workflow.pk, "cron": "0 9 * * *", "timezone": "UTC", "args": args,
                            "overlap": "skip", "enabled": "on"})
        assert page.status_code == 200 and says in page.content.decode()
        assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_the_admin_deletes_a_schedule_that_has_fired_with_its_records(client, add_schedule, report):
    schedule = add_schedule(report)
    fire_due_schedules(now=schedule.next_fire_at)
    client.force_login(staff("adele", "Admins"))
    assert client.post(reverse("admin:forge_schedules_schedule_delete", args=[schedule.pk]),
                       {"post": "yes"}).status_code == 302
    assert not Schedule.objects.exists() and not ScheduleFire.objects.exists()
    assert AuditEvent.objects.filter(code="forge.schedule.deleted").count() == 1


@pytest.mark.django_db
def test_lifting_the_kill_switch_in_a_repeated_hour_does_not_repeat_a_time_of_day(add_schedule, report, admin_user):
    schedule = add_schedule(report, cron="30 2 * * *", timezone="Europe/Berlin", now=utc(2030, 10, 26, 12))
    fire_due_schedules(now=utc(2030, 10, 27, 0, 30))  # 02:30 CEST; the clocks go back at 03:00
    services.kill_switch_set(user=admin_user, engaged=True, now=utc(2030, 10, 27, 0, 40))
    services.kill_switch_set(user=admin_user, engaged=False, now=utc(2030, 10, 27, 0, 45))
    schedule.refresh_from_db()
    assert schedule.next_fire_at == utc(2030, 10, 28, 1, 30)  # not 02:30 CET the same night


@pytest.mark.django_db
def test_changing_what_a_queue_one_schedule_runs_drops_its_waiting_due_time(add_schedule, sign_off, report,
                                                                            operator):
    schedule = add_schedule(sign_off, overlap="queue_one")
    fire_due_schedules(now=utc(2030, 1, 14, 10, 10))  # starts a run that waits for a person
    fire_due_schedules(now=utc(2030, 1, 14, 10, 20))  # queued behind it
    schedule.refresh_from_db()
    assert schedule.queued_due_at == utc(2030, 1, 14, 10, 20)
    services.schedule_update(user=operator, schedule=schedule, workflow=report, args={"region": "eu"},
                             now=utc(2030, 1, 14, 10, 25))
    schedule.refresh_from_db()
    assert schedule.queued_due_at is None
    assert ScheduleFire.objects.get(due_at=utc(2030, 1, 14, 10, 20)).status == "dropped"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_engaging_the_kill_switch_waits_for_a_decision_under_way(add_schedule, report, admin_user, monkeypatch):
    schedule = add_schedule(report)
    inside, release, engaged = threading.Event(), threading.Event(), threading.Event()
    checked = guards.valid

    def held_valid(attempt):
        inside.set()
        assert release.wait(120)
        return checked(attempt)

    monkeypatch.setattr(guards, "BEFORE_OVERLAP", (guards.kill_switch_off, guards.within_budget, held_valid))
    monkeypatch.setattr("forge.schedules.firing.BEFORE_OVERLAP", guards.BEFORE_OVERLAP)

    def fire():
        try:
            fire_due_schedules(now=schedule.next_fire_at)
        finally:
            connection.close()

    def engage():
        try:
            services.kill_switch_set(user=admin_user, engaged=True)
            engaged.set()
        finally:
            connection.close()

    firing = threading.Thread(target=fire)
    firing.start()
    assert inside.wait(120)
    admin = threading.Thread(target=engage)
    admin.start()
    engaged_early = engaged.wait(2)  # without the lock it returns at once, while the run is still being started
    release.set()
    firing.join(120)
    admin.join(120)
    assert not engaged_early
    assert engaged.is_set()
