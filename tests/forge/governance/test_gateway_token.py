"""The admin's "Issue a new callback token" action: only people who may change gateways rotate a token."""

import json
import re

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.governance.models import Gateway
from tests.forge.admin_pages import staff

CHANGELIST = "admin:forge_governance_gateway_changelist"


@pytest.fixture
def gateway(db):
    gateway = Gateway(name="edge", url="https://gateway.example.com/dispatch")
    gateway.set_token("the-token-the-gateway-holds")
    gateway.save()
    return gateway


def issue_token(client, gateway):
    response = client.post(reverse(CHANGELIST), {"action": "issue_token", "_selected_action": [gateway.pk],
                                                 "index": "0"}, follow=True)
    assert response.status_code == 200
    return [str(message) for message in response.context["messages"]]


def test_a_view_only_staff_user_cannot_issue_a_token_and_the_old_one_keeps_working(client, gateway):
    client.force_login(staff("vera", permissions=("view_gateway",)))
    before = gateway.token_hash
    shown = issue_token(client, gateway)
    gateway.refresh_from_db()
    assert gateway.token_hash == before
    assert gateway.token_matches("the-token-the-gateway-holds")
    assert not any("new token" in message for message in shown)
    assert not AuditEvent.objects.exists()


def test_an_admin_issues_a_working_token_shown_once_and_the_audit_names_them_but_not_the_token(client, gateway):
    admin = staff("adele", "Admins")
    client.force_login(admin)
    before = gateway.token_hash
    shown = " ".join(issue_token(client, gateway))
    token = re.search(r"edge: new token (\S+) ", shown).group(1)
    gateway.refresh_from_db()
    assert gateway.token_hash != before
    assert gateway.token_matches(token) and not gateway.token_matches("the-token-the-gateway-holds")
    event = AuditEvent.objects.get(code="forge.gateway.token_issued")
    assert (event.actor, event.actor_id, event.target) == ("adele", admin.pk, "gateway:edge")
    written = json.dumps([event.code, event.target, event.detail, event.step])
    assert token not in written and gateway.token_hash not in written


def test_the_token_service_refuses_a_user_who_may_not_change_gateways(gateway):
    from forge.governance.services import gateway_token_issue  # new on this branch

    before = gateway.token_hash
    with pytest.raises(PermissionDenied, match="change gateways"):
        gateway_token_issue(user=staff("vera", permissions=("view_gateway",)), gateway=gateway)
    gateway.refresh_from_db()
    assert gateway.token_hash == before and not AuditEvent.objects.exists()
