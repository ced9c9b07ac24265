"""Agents, gateways, budget envelopes and policies edited in the admin are audited: who, before and after."""

import pytest

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy
from tests.forge.admin_pages import AdminEditor, AuditedAdminPages, Page, staff

AGENT = Page(Agent, "agent",
             add={"name": "", "provider": "mock", "config": "{}", "routes-TOTAL_FORMS": "0",
                  "routes-INITIAL_FORMS": "0", "overridable": ["model"], "enabled": "on",
                  "status": "active", "role": "", "trust_level": "1", "required_context_trust": "0",
                  "max_concurrency": "", "rate_limit_per_minute": "", "monthly_budget": "", "estimated_cost": "0"},
             change={"trust_level": "3", "max_concurrency": "2"},
             bad={"provider": "http", "config": '{"token_env": "FORGE_SECRET_KEY"}'})
GATEWAY = Page(Gateway, "gateway",
               add={"name": "", "url": "https://gateway.example.com/dispatch", "min_trust_level": "0",
                    "capabilities": "[]", "health_url": "https://gateway.example.com/health", "cancel_url": ""},
               change={"url": "https://other.example.com/dispatch"},
               bad={"url": "not a url"})
ENVELOPE = Page(BudgetEnvelope, "budget",
                add={"name": "", "scope": "org", "limit": "10", "monthly": "on", "enabled": "on"},
                change={"limit": "25.5"},
                bad={"scope": "team:payments"})
POLICY = Page(Policy, "policy",
              add={"name": "", "when": "agent.trust_level < 2", "effect": "require_approval", "message": "",
                   "enabled": "on", "order": "0"},
              change={"when": "agent.trust_level < 3", "effect": "block"},
              bad={"when": "agent.trust_level <"})


@pytest.fixture(params=[AGENT, GATEWAY, ENVELOPE, POLICY], ids=lambda page: page.noun)
def page(request):
    return request.param


class TestGovernanceAdminPages(AuditedAdminPages):
    pass


class TestPolicyChangeList(AdminEditor):
    """The policy list's editable columns (enabled, order) go through the same service."""

    @pytest.fixture
    def page(self):
        return POLICY

    def test_editing_the_list_columns_audits_the_changed_policy_with_its_changed_columns(self, admin_client, page):
        first, second = (self.add(admin_client, page, name, order=str(i)) for i, name in enumerate(("a", "b")))
        response = admin_client.post(page.url("changelist"), {
            "form-TOTAL_FORMS": "2", "form-INITIAL_FORMS": "2", "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000", "_save": "Save",
            "form-0-id": str(first.pk), "form-0-enabled": "on", "form-0-order": "0",  # a: as it was
            "form-1-id": str(second.pk), "form-1-order": "7"})  # b: switched off and moved
        assert response.status_code == 302, response.content.decode()[:2000]
        second.refresh_from_db()
        assert (second.enabled, second.order) == (False, 7)
        changed = AuditEvent.objects.get(code="forge.policy.changed")
        assert (changed.target, changed.actor) == ("policy:b", "adele")
        assert changed.detail == {"before": {"enabled": True, "order": 1}, "after": {"enabled": False, "order": 7}}


class TestAgentDetails(AdminEditor):
    @pytest.fixture
    def page(self):
        return AGENT

    def test_an_agents_gateways_are_recorded_by_name_in_order_and_no_gateway_token_hash_is_ever_recorded(
            self, admin_client, page):
        gateway = self.add(admin_client, GATEWAY, "edge")
        gateway.set_token("a-callback-token")
        gateway.save()
        spare = self.add(admin_client, GATEWAY, "spare")
        self.add(admin_client, page, "reviewer", provider="http", config='{"token_env": "FORGE_AGENT_SECRET_REVIEWER"}',
                 **{"routes-TOTAL_FORMS": "2", "routes-0-gateway": str(spare.pk), "routes-0-position": "2",
                    "routes-1-gateway": str(gateway.pk), "routes-1-position": "1"})
        created = AuditEvent.objects.get(code="forge.agent.created")
        assert created.detail["after"]["config"] == {"token_env": "FORGE_AGENT_SECRET_REVIEWER"}
        listed = AuditEvent.objects.get(code="forge.agent.changed", target="agent:reviewer")
        assert (listed.actor, listed.detail) == ("adele", {"before": {"gateways": []},
                                                           "after": {"gateways": ["edge", "spare"]}})
        agent = Agent.objects.get(name="reviewer")
        assert [route.gateway.name for route in agent.routes.all()] == ["edge", "spare"]
        assert all(gateway.token_hash not in str(e.detail) for e in AuditEvent.objects.all())

    def test_reordering_an_agents_gateways_is_audited_and_naming_one_twice_is_refused(self, admin_client, page):
        edge, spare = (Gateway.objects.create(name=name, url="https://gw.example.com/") for name in ("edge", "spare"))
        agent = Agent.objects.create(name="reviewer", provider="http")
        first = AgentGateway.objects.create(agent=agent, gateway=edge, position=0)
        second = AgentGateway.objects.create(agent=agent, gateway=spare, position=1)
        base = {**page.form("reviewer", provider="http"), "routes-TOTAL_FORMS": "2", "routes-INITIAL_FORMS": "2",
                "routes-0-id": str(first.pk), "routes-0-agent": str(agent.pk), "routes-0-gateway": str(edge.pk),
                "routes-1-id": str(second.pk), "routes-1-agent": str(agent.pk), "routes-1-gateway": str(spare.pk)}
        twice = admin_client.post(page.url("change", agent.pk), {**base, "routes-0-position": "0",
                                                                 "routes-1-gateway": str(edge.pk),
                                                                 "routes-1-position": "1"})
        assert twice.status_code == 200
        assert not AuditEvent.objects.filter(target="agent:reviewer").exists()
        response = admin_client.post(page.url("change", agent.pk), {**base, "routes-0-position": "5",
                                                                    "routes-1-position": "1"})
        assert response.status_code == 302, response.content.decode()[:2000]
        assert [route.gateway.name for route in agent.routes.all()] == ["spare", "edge"]
        (event,) = [e for e in AuditEvent.objects.filter(code="forge.agent.changed", target="agent:reviewer")
                    if "gateways" in e.detail["after"]]
        assert event.detail == {"before": {"gateways": ["edge", "spare"]}, "after": {"gateways": ["spare", "edge"]}}


def test_deleting_a_gateway_agents_still_use_is_refused_and_not_audited(client, db):
    admin = staff("adele", "Admins")
    client.force_login(admin)
    gateway = Gateway.objects.create(name="edge", url="https://gateway.example.com/")
    AgentGateway.objects.create(agent=Agent.objects.create(name="reviewer", provider="http"), gateway=gateway)
    response = client.post(GATEWAY.url("delete", gateway.pk), {"post": "yes"})
    assert response.status_code == 200 and b"protected" in response.content.lower()
    assert Gateway.objects.filter(pk=gateway.pk).exists()
    assert not AuditEvent.objects.exists()
