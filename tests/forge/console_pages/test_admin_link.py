"""Admins reach Django admin from the console without being staff; nobody else in a group does."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_an_admin_follows_the_admin_link_into_django_admin(client, admin_user):
    assert not admin_user.is_staff
    client.force_login(admin_user)
    assert 'href="/admin/"' in client.get(reverse("console:dashboard")).content.decode()
    page = client.get("/admin/")
    assert page.status_code == 200 and "Budget envelopes" in page.content.decode()
    assert client.get("/admin/forge_governance/agent/").status_code == 200


@pytest.mark.parametrize("who", ["operator", "approver", "outsider"])
def test_no_one_else_sees_the_link_or_gets_in(client, who, request):
    client.force_login(request.getfixturevalue(who))
    dashboard = client.get(reverse("console:dashboard"))
    assert 'href="/admin/"' not in dashboard.content.decode()
    assert client.get("/admin/").status_code == 302  # to the admin's login
