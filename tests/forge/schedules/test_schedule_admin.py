"""The admin pages for schedules, their fire records and the kill switch, as a person uses them: real GETs
and POSTs, changes through the services (audited), bad input shown on the form, never a 500."""

import pytest
from django.urls import NoReverseMatch, reverse
from django_q.models import Schedule as QueueSchedule

from forge.audit.models import AuditEvent
from forge.schedules.models import Schedule
from forge.schedules.selectors import kill_switch
from tests.forge.admin_pages import staff

pytestmark = pytest.mark.django_db


def url(model: str, view: str = "changelist", *args) -> str:
    return reverse(f"admin:forge_schedules_{model}_{view}", args=args)


@pytest.fixture
def adele(client):
    user = staff("adele", "Admins")
    client.force_login(user)
    return user


def form(workflow, **more) -> dict:
    return {"workflow": workflow.pk, "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "args": '{"region": "eu"}',
            "overlap": "skip", "enabled": "on", **more}


@pytest.mark.parametrize("page", [("schedule",), ("schedule", "add"), ("schedulefire",), ("killswitch",)])
def test_each_page_opens_for_an_admin(client, adele, report, page):
    assert client.get(url(*page)).status_code == 200


def test_adding_one_goes_through_the_service_and_lists_its_next_fire(client, adele, report):
    response = client.post(url("schedule", "add"), form(report))
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = Schedule.objects.get()
    assert (schedule.owner, schedule.args, schedule.next_fire_at is not None) == (adele, {"region": "eu"}, True)
    assert AuditEvent.objects.get(code="forge.schedule.added").actor == "adele"
    page = client.get(url("schedule")).content.decode()
    assert "0 9 * * 1-5" in page and "Europe/Berlin" in page
    assert client.get(url("schedule", "change", schedule.pk)).status_code == 200


@pytest.mark.parametrize("bad, field, says", [
    ({"cron": "0 9 * *"}, "cron", "five fields"),
    ({"cron": "99 * * * *"}, "cron", "not a usable cron expression"),
    ({"timezone": "Europe/Atlantis"}, "timezone", "not a known IANA time zone"),
    ({"args": '{"colour": "red"}'}, "args", "argument &#x27;colour&#x27; is not declared"),
], ids=["fields", "range", "timezone", "args"])
def test_a_bad_value_is_shown_on_the_form_and_nothing_is_saved(client, adele, report, bad, field, says):
    response = client.post(url("schedule", "add"), form(report, **bad))
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert says in response.content.decode()
    assert not Schedule.objects.exists()
    assert not AuditEvent.objects.filter(code__startswith="forge.schedule.").exists()


def test_changing_one_and_unticking_enabled_updates_and_pauses_it(client, adele, report):
    client.post(url("schedule", "add"), form(report))
    schedule = Schedule.objects.get()
    data = form(report, cron="30 7 * * *")
    del data["enabled"]
    response = client.post(url("schedule", "change", schedule.pk), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule.refresh_from_db()
    assert (schedule.cron, schedule.enabled, schedule.next_fire_at) == ("30 7 * * *", False, None)
    assert [e.code for e in AuditEvent.objects.filter(target=f"schedule:{schedule.pk}")] == [
        "forge.schedule.added", "forge.schedule.changed", "forge.schedule.paused"]


def test_the_pause_and_resume_actions_and_delete(client, adele, report):
    client.post(url("schedule", "add"), form(report))
    schedule = Schedule.objects.get()
    client.post(url("schedule"), {"action": "pause", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert not schedule.enabled
    client.post(url("schedule"), {"action": "resume", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_fire_at is not None
    assert client.post(url("schedule", "delete", schedule.pk), {"post": "yes"}).status_code == 302
    assert not Schedule.objects.exists()
    assert AuditEvent.objects.filter(code="forge.schedule.deleted").count() == 1


def test_the_kill_switch_page_engages_and_lifts_it(client, adele):
    response = client.post(url("killswitch"), {"engaged": "on", "reason": "incident 42"})
    assert response.status_code == 302
    assert kill_switch().engaged and kill_switch().reason == "incident 42"
    assert "Engaged" in client.get(url("killswitch")).content.decode()
    client.post(url("killswitch"), {"engaged": "off"})
    assert not kill_switch().engaged
    assert [e.code for e in AuditEvent.objects.filter(target="killswitch")] == [
        "forge.killswitch.engaged", "forge.killswitch.lifted"]


def test_an_operator_sees_the_kill_switch_but_may_not_engage_it(client):
    client.force_login(staff("otto", "Operators"))
    assert client.get(url("schedule")).status_code == 200
    assert "Only Admins" in client.get(url("killswitch")).content.decode()
    assert client.post(url("killswitch"), {"engaged": "on"}).status_code == 403
    assert not kill_switch().engaged


def test_a_staff_member_outside_the_groups_sees_no_schedule_page(client):
    client.force_login(staff("stan"))
    for page in ("schedule", "schedulefire", "killswitch"):
        assert client.get(url(page)).status_code == 403


def test_django_q_s_own_schedules_are_no_longer_offered(client, adele):
    opts = QueueSchedule._meta
    with pytest.raises(NoReverseMatch):
        reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    assert "/admin/django_q/schedule/" not in client.get(reverse("admin:index")).content.decode()


def test_fire_records_are_read_only_even_for_an_admin(client, adele):
    assert client.get(url("schedulefire", "add")).status_code == 403
    assert "Add schedule fire" not in client.get(url("schedulefire")).content.decode()
