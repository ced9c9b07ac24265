"""`network: true` on a shell agent gives its steps the worker's network (127.0.0.1's PostgreSQL and Redis
included), so only the server's operator grants it, by listing the agent in FORGE_SHELL_NETWORK_AGENTS: an Admin
cannot save it otherwise, and a row saved before the rule fails its steps."""

import pytest
from django.core.exceptions import ValidationError

from forge.governance import services
from forge.governance.models import Agent
from forge.runtime.agents import AgentMisconfigured, executor_for


def test_an_admin_cannot_give_a_shell_agent_the_network(admin_user):
    agent = Agent(name="netted", provider="shell", config={"network": True})
    with pytest.raises(ValidationError) as refused:
        services.config_save(user=admin_user, instance=agent)
    assert "only the server's operator can allow it" in str(refused.value) and "FORGE_" not in str(refused.value)
    assert not Agent.objects.filter(name="netted").exists()


def test_the_operator_grants_it_by_name(admin_user, settings):
    settings.FORGE_SHELL_NETWORK_AGENTS = frozenset({"netted"})
    agent = Agent(name="netted", provider="shell", config={"network": True})
    services.config_save(user=admin_user, instance=agent)
    assert executor_for(Agent.objects.get(name="netted")).sandbox.network is True
    other = Agent(name="other", provider="shell", config={"network": True})
    with pytest.raises(ValidationError):
        other.full_clean()


@pytest.mark.parametrize("config", [{}, {"network": False}])
def test_an_agent_without_the_network_needs_no_grant(db, config):
    Agent(name="quiet", provider="shell", config=config).full_clean()


def test_a_row_saved_before_the_rule_fails_its_steps(db):
    agent = Agent.objects.create(name="old", provider="shell", config={"network": True})  # no validation
    with pytest.raises(AgentMisconfigured, match="only the server's operator can allow it") as refused:
        executor_for(agent)
    assert "FORGE_" not in str(refused.value)  # a step's error is read by people on the run page
