"""The kill switch on the dashboard (issue 17, point 18): it says it stops schedules only, an Admin engages or
lifts it there with a reason through the schedules' service (audited), and others see the state only."""

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.schedules import services
from forge.schedules.selectors import kill_switch

pytestmark = pytest.mark.django_db

STOPPED = "Schedules stopped by the kill switch (manual runs still start)."


def dashboard(client) -> str:
    return client.get(reverse("console:dashboard")).content.decode()


def flip(client, engaged: str, reason: str = "incident 42"):
    return client.post(reverse("console:kill_switch"), {"engaged": engaged, "reason": reason}, follow=True)


def test_an_admin_engages_it_with_a_reason_then_lifts_it_each_audited(client, admin_user):
    client.force_login(admin_user)
    html = dashboard(client)
    assert "the kill switch is off" in html and "Engage the kill switch" in html and STOPPED not in html
    page = flip(client, "on", "incident 42")
    html = page.content.decode()
    assert STOPPED in html and "by adam" in html and "incident 42" in html and "Lift the kill switch" in html
    assert "Kill switch engaged: schedules start no run; runs people start still start." in html
    assert kill_switch().engaged
    (event,) = AuditEvent.objects.filter(code="forge.killswitch.engaged")
    assert (event.actor, event.detail) == ("adam", {"reason": "incident 42"})
    html = flip(client, "off", "fixed").content.decode()
    assert STOPPED not in html and "lifted by adam" in html and not kill_switch().engaged
    assert AuditEvent.objects.filter(code="forge.killswitch.lifted", detail__reason="fixed").count() == 1


@pytest.mark.parametrize("who", ["operator", "approver"])
def test_others_see_the_state_and_no_form_and_a_post_changes_nothing(client, request, admin_user, who):
    services.kill_switch_set(user=admin_user, engaged=True, reason="incident 42")
    client.force_login(request.getfixturevalue(who))
    html = dashboard(client)
    assert STOPPED in html and "incident 42" in html and 'id="kill-switch-form"' not in html
    page = flip(client, "off", "I want my schedules")
    assert "Nothing changed: only Admins engage or lift the kill switch." in page.content.decode()
    assert kill_switch().engaged and not AuditEvent.objects.filter(code="forge.killswitch.lifted").exists()


def test_someone_in_no_group_may_not_post(client, outsider):
    client.force_login(outsider)
    assert client.post(reverse("console:kill_switch"), {"engaged": "on", "reason": "x"}).status_code == 403
    assert not kill_switch().engaged


@pytest.mark.parametrize("form, says", [
    ({"engaged": "on", "reason": ""}, "Nothing changed: say why, in the reason."),
    ({"engaged": "on", "reason": "   "}, "Nothing changed: say why, in the reason."),
    ({"engaged": "yes", "reason": "x"}, "Nothing changed: say whether to engage (on) or lift (off)"),
    ({"engaged": "<script>", "reason": "x"}, "Nothing changed: say whether to engage (on) or lift (off)"),
    ({"reason": "x"}, "Nothing changed: say whether to engage (on) or lift (off)"),
    ({"engaged": "on", "reason": "r" * 2001}, "the reason has 2001 characters; at most 2000 are accepted."),
    ({"engaged": "off", "reason": "already off"}, "Nothing changed: the kill switch is already off."),
])
def test_a_bad_post_says_why_and_changes_nothing(client, admin_user, form, says):
    client.force_login(admin_user)
    page = client.post(reverse("console:kill_switch"), form, follow=True)
    assert page.status_code == 200 and says in page.content.decode()
    assert not kill_switch().engaged and not AuditEvent.objects.filter(code__startswith="forge.killswitch").exists()


def test_the_longest_reason_is_kept_whole(client, admin_user):
    client.force_login(admin_user)
    flip(client, "on", "r" * 2000)
    assert kill_switch().reason == "r" * 2000


def test_a_get_is_refused(client, admin_user):
    client.force_login(admin_user)
    assert client.get(reverse("console:kill_switch")).status_code == 405
