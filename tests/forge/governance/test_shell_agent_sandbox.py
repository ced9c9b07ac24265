"""A shell agent's sandbox settings (`network`, `limits`) are checked where an Admin saves them, the admin form
says what `network: true` reaches, and a step runs with its agent's settings."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from forge.governance.models import Agent
from forge.runtime.agents import executor_for


def test_the_admin_form_says_what_network_reaches(client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("admin:forge_governance_agent_add"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "the worker's own network" in text and "127.0.0.1 included" in text


@pytest.mark.parametrize("config", [{"network": "yes"}, {"limits": {"memory_mb": 1}}, {"limits": {"swap": 1}}])
def test_bad_sandbox_settings_are_refused_on_save(db, config):
    with pytest.raises(ValidationError) as refused:
        Agent(name="boxed", provider="shell", config=config).full_clean()
    assert "config" in refused.value.message_dict


def test_a_shell_agents_network_and_limits_reach_its_executor(db, settings):
    settings.FORGE_SHELL_NETWORK_AGENTS = frozenset({"boxed"})
    agent = Agent(name="boxed", provider="shell", config={"network": True, "limits": {"processes": 32}})
    agent.full_clean()
    sandbox = executor_for(agent).sandbox
    assert sandbox.enabled and sandbox.network and sandbox.limits["processes"] == 32
    assert executor_for(Agent(name="plain", provider="shell", config={})).sandbox.network is False
