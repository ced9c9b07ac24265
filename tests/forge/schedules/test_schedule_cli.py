"""`forge schedules`, `forge schedule add|pause|resume|delete` and `forge killswitch`, as people type them."""

import json

import pytest

from forge.audit.models import AuditEvent
from forge.schedules.models import Schedule
from forge.schedules.selectors import kill_switch
from tests.forge.test_forge_command import run_command as forge

pytestmark = pytest.mark.django_db


def add(*more: str, user: str = "olive") -> tuple[int, str, str]:
    return forge("--user", user, "schedule", "add", "nightly_report", "--cron", "0 9 * * 1-5", *more)


def test_adding_one_prints_when_it_fires_next_and_it_is_owned_by_the_user(report, operator):
    code, out, _ = add("--tz", "Europe/Berlin", "--arg", "region=eu", "--arg", "copies=2", "--overlap", "queue_one")
    assert code == 0
    schedule = Schedule.objects.get()
    assert f"schedule {schedule.pk} added: nightly_report at 0 9 * * 1-5 (Europe/Berlin); next fire" in out
    assert (schedule.owner, schedule.args, schedule.overlap) == (operator, {"region": "eu", "copies": 2},
                                                                 "queue_one")
    assert AuditEvent.objects.get(code="forge.schedule.added").actor == "olive"


def test_with_json_adding_one_prints_the_schedule_as_one_object(report, operator):
    code, out, _ = add("--arg", "region=eu", "--paused", "--json")
    assert code == 0
    row = json.loads(out)
    assert (row["workflow"], row["enabled"], row["next_fire_at"], row["owner"]) == (
        "nightly_report", False, None, "olive")


@pytest.mark.parametrize("argv, says", [
    (("--cron", "0 25 * * *"), "not a usable cron expression"),
    (("--tz", "Atlantis/Capital"), "not a known IANA time zone"),
    (("--arg", "colour=red"), "argument 'colour' is not declared"),
    (("--arg", "region"), "--arg 'region': expected KEY=VALUE"),
], ids=["cron", "tz", "undeclared-arg", "malformed-arg"])
def test_bad_input_exits_2_with_a_clear_message_and_adds_nothing(report, operator, argv, says):
    code, out, err = add("--arg", "region=eu", *argv)
    assert code == 2
    assert says in err and err.startswith("forge: ")
    assert not Schedule.objects.exists()


def test_an_unknown_workflow_exits_2(operator):
    code, _, err = forge("--user", "olive", "schedule", "add", "ghost", "--cron", "@daily")
    assert code == 2 and "there is no workflow 'ghost'" in err


def test_a_user_who_may_not_manage_schedules_exits_4(report, outsider):
    code, _, err = add("--arg", "region=eu", user="oscar")
    assert code == 4 and "you may not manage schedules" in err  # refused (forge.errors.EXIT_REFUSED)
    assert not Schedule.objects.exists()


def test_the_list_shows_each_schedule_with_its_next_fire_and_last_status(report, operator):
    add("--arg", "region=eu")
    code, out, _ = forge("schedules")
    assert code == 0
    assert "nightly_report" in out and "0 9 * * 1-5" in out and "enabled" in out and "never fired" in out
    code, out, _ = forge("schedules", "--json")
    (row,) = json.loads(out)
    assert (row["cron"], row["timezone"], row["overlap"], row["last_dispatch_status"]) == (
        "0 9 * * 1-5", "UTC", "skip", None)


def test_pause_resume_and_delete_by_id(report, operator):
    add("--arg", "region=eu")
    pk = str(Schedule.objects.get().pk)
    assert forge("--user", "olive", "schedule", "pause", pk)[:2] == (0, f"schedule {pk} paused\n")
    assert not Schedule.objects.get().enabled
    code, out, _ = forge("--user", "olive", "schedule", "resume", pk)
    assert code == 0 and out.startswith(f"schedule {pk} resumed; next fire ")
    assert forge("--user", "olive", "schedule", "delete", pk)[:2] == (0, f"schedule {pk} deleted\n")
    assert not Schedule.objects.exists()
    assert [e.code for e in AuditEvent.objects.filter(target=f"schedule:{pk}")] == [
        "forge.schedule.added", "forge.schedule.paused", "forge.schedule.resumed", "forge.schedule.deleted"]


def test_an_unknown_schedule_id_exits_2(db):
    code, _, err = forge("schedule", "pause", "404")
    assert code == 2 and "there is no schedule 404" in err


def test_the_kill_switch_is_shown_engaged_and_lifted(admin_user):
    assert forge("killswitch")[:2] == (0, "kill switch off; schedules fire at their cron times\n")
    code, out, _ = forge("--user", "adam", "killswitch", "on", "--reason", "incident 42")
    assert code == 0 and out.startswith("kill switch engaged by adam at ") and "incident 42" in out
    assert kill_switch().engaged
    code, out, _ = forge("--user", "adam", "killswitch", "off")
    assert code == 0 and out.startswith("kill switch off (lifted by adam")
    assert not kill_switch().engaged


def test_an_operator_may_not_engage_the_kill_switch(operator):
    code, _, err = forge("--user", "olive", "killswitch", "on")
    assert code == 4 and "you may not engage or lift the kill switch" in err
    assert not kill_switch().engaged
