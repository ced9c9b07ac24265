"""An agent's ordered gateways change through one audited service (the admin's inline uses it)."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, Gateway
from forge.governance.services import agent_gateways_set
from tests.forge.admin_pages import staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    agent = Agent.objects.create(name="trainer", provider="http")
    return agent, [Gateway.objects.create(name=name, url=f"https://{name}.example.com/") for name in ("a", "b", "c")]


def names(agent):
    return [route.gateway.name for route in AgentGateway.objects.filter(agent=agent)]


def test_an_admin_sets_the_order_and_the_audit_says_before_and_after(world):
    agent, (a, b, c) = world
    adele = staff("adele", "Admins")
    agent_gateways_set(user=adele, agent=agent, gateways=[c, a])
    agent_gateways_set(user=adele, agent=agent, gateways=[a, c, b])
    assert names(agent) == ["a", "c", "b"]
    events = AuditEvent.objects.filter(code="forge.agent.changed", target="agent:trainer").order_by("id")
    assert [(e.actor, e.detail) for e in events] == [
        ("adele", {"before": {"gateways": []}, "after": {"gateways": ["c", "a"]}}),
        ("adele", {"before": {"gateways": ["c", "a"]}, "after": {"gateways": ["a", "c", "b"]}})]


def test_the_same_list_again_changes_and_audits_nothing(world):
    agent, (a, b, _) = world
    agent_gateways_set(user=None, agent=agent, gateways=[a, b])
    agent_gateways_set(user=None, agent=agent, gateways=[a, b])
    assert AuditEvent.objects.filter(code="forge.agent.changed").count() == 1


def test_someone_who_may_not_change_agents_changes_nothing(world):
    agent, (a, _, _) = world
    with pytest.raises(PermissionDenied):
        agent_gateways_set(user=staff("vera", permissions=("view_agent",)), agent=agent, gateways=[a])
    assert names(agent) == [] and not AuditEvent.objects.exists()


def test_a_gateway_named_twice_is_refused_and_nothing_changes(world):
    agent, (a, b, _) = world
    agent_gateways_set(user=None, agent=agent, gateways=[b])
    with pytest.raises(ValidationError, match="once"):
        agent_gateways_set(user=None, agent=agent, gateways=[a, a])
    assert names(agent) == ["b"]


def test_saving_a_gateway_keeps_the_health_measured_meanwhile(world):
    from forge.governance import health
    from forge.governance.services import config_save
    _, (a, _, _) = world
    form = Gateway.objects.get(pk=a.pk)  # what the admin's form read
    health.failed(a.pk, "could not connect to a.example.com:443: Connection refused", probed=True)
    form.url = "https://a2.example.com/"
    config_save(user=staff("adele", "Admins"), instance=form)
    saved = Gateway.objects.get(pk=a.pk)
    assert (saved.url, saved.healthy, saved.failures) == ("https://a2.example.com/", False, 1)
    assert "Connection refused" in saved.last_error
    (event,) = AuditEvent.objects.filter(code="forge.gateway.changed")
    assert set(event.detail["after"]) == {"url"}
