"""An agent reads only the secrets the operator put there for agents (FORGE_AGENT_SECRET_*), never the server's.

An Admins member edits agents but is not the server's operator: a `token_env`
or `api_key_env` naming FORGE_SECRET_KEY would send the server's key, as a
Bearer header, to a listener of their choice. Refused on save, and again at
dispatch for a row that skipped validation.
"""

from __future__ import annotations

import json
import os

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from forge.governance.models import Agent
from forge.runs import services
from tests.forge.api.conftest import local_server  # noqa: F401 - the fixture
from tests.forge.api.test_gateway_sync_and_openai import chat_completion, everything_recorded
from tests.forge.conftest import member, steps_of

pytestmark = pytest.mark.django_db

RULE = "agents may only read environment variables named FORGE_AGENT_SECRET_<NAME>"
SERVER_SECRET = os.environ["FORGE_SECRET_KEY"]  # set for the test run by tests/settings.py

WORKFLOW = """
name: leak
steps:
  - id: remote
    agent: {agent}
    command: "say hello"
    timeout: 30
"""


@pytest.fixture
def staff_admin(db):
    """An Admins member who may use Django admin: not a superuser."""
    user = member("adele", "Admins")
    user.is_staff = True
    user.save()
    assert not user.is_superuser
    return user


def admin_form(**changes) -> dict:
    data = {"name": "leaky", "provider": "http", "routes-TOTAL_FORMS": "0", "routes-INITIAL_FORMS": "0", "enabled": "on", "status": "active", "role": "",
            "trust_level": "0", "required_context_trust": "0", "max_concurrency": "", "rate_limit_per_minute": "",
            "monthly_budget": "", "estimated_cost": "0",
            "config": json.dumps({"url": "https://gateway.example/steps", "token_env": "FORGE_SECRET_KEY"})}
    data.update(changes)
    return data


def config_errors(response) -> list[str]:
    return list(response.context["adminform"].form.errors.get("config", []))


@pytest.mark.parametrize(("provider", "config"), [
    ("http", {"url": "https://gateway.example/steps", "token_env": "FORGE_SECRET_KEY"}),
    ("openai", {"model": "gpt-4o-mini", "api_key_env": "DATABASE_URL"}),
])
def test_an_admin_cannot_add_an_agent_that_reads_a_server_secret(client, staff_admin, provider, config):
    client.force_login(staff_admin)

    response = client.post(reverse("admin:forge_governance_agent_add"),
                           admin_form(provider=provider, config=json.dumps(config)))

    assert response.status_code == 200
    assert any(RULE in error for error in config_errors(response)), config_errors(response)
    assert not Agent.objects.filter(name="leaky").exists()


def test_an_admin_cannot_change_an_agent_to_read_a_server_secret(client, staff_admin):
    agent = Agent.objects.create(name="leaky", provider="http", config={"url": "https://gateway.example/steps"})
    client.force_login(staff_admin)

    response = client.post(reverse("admin:forge_governance_agent_change", args=[agent.pk]), admin_form())

    assert response.status_code == 200
    assert any("token_env" in error and RULE in error for error in config_errors(response))
    agent.refresh_from_db()
    assert agent.config == {"url": "https://gateway.example/steps"}


def test_an_admin_may_name_an_agent_secret(client, staff_admin):
    client.force_login(staff_admin)
    config = {"url": "https://gateway.example/steps", "token_env": "FORGE_AGENT_SECRET_GATEWAY_TOKEN"}

    response = client.post(reverse("admin:forge_governance_agent_add"), admin_form(config=json.dumps(config)))

    assert response.status_code == 302, config_errors(response)
    assert Agent.objects.get(name="leaky").config == config


@pytest.mark.parametrize(("provider", "config", "key"), [
    ("http", {"url": "https://gateway.example/steps", "token_env": "FORGE_SECRET_KEY"}, "token_env"),
    ("openai", {"model": "gpt-4o-mini", "api_key_env": "DATABASE_URL"}, "api_key_env"),
    ("openai", {"model": "gpt-4o-mini", "api_key_env": "FORGE_AGENT_SECRET_"}, "api_key_env"),
    ("openai", {"model": "gpt-4o-mini", "api_key_env": ["FORGE_AGENT_SECRET_KEY"]}, "api_key_env"),
])
def test_full_clean_refuses_a_config_that_names_a_server_secret(provider, config, key):
    agent = Agent(name="leaky", provider=provider, config=config)

    with pytest.raises(ValidationError) as refused:
        agent.full_clean()

    assert list(refused.value.message_dict) == ["config"]
    [problem] = refused.value.message_dict["config"]
    assert problem.startswith(f"{key}: ") and RULE in problem


def test_a_config_that_is_not_an_object_is_refused():
    with pytest.raises(ValidationError) as refused:
        Agent(name="odd", provider="http", config=["FORGE_SECRET_KEY"]).full_clean()
    assert refused.value.message_dict == {"config": ["the configuration must be a JSON object"]}


# -- at dispatch: a row written around validation --------------------------------------------------------------------


def start(operator, save_workflow, capture, agent: str):
    with capture(execute=True):
        run = services.run_start(user=operator, version=save_workflow(WORKFLOW.format(agent=agent)))
    run.refresh_from_db()
    return run


@pytest.mark.parametrize(("provider", "config", "key"), [
    ("http", {"token_env": "FORGE_SECRET_KEY"}, "token_env"),
    ("openai", {"model": "gpt-4o-mini", "api_key_env": "FORGE_SECRET_KEY"}, "api_key_env"),
])
def test_a_row_that_bypassed_validation_fails_its_step_and_sends_nothing(
        operator, save_workflow, local_server, django_capture_on_commit_callbacks, provider, config, key):
    address = {"url": f"{local_server.url}/steps"} if provider == "http" else {"base_url": f"{local_server.url}/v1"}
    Agent.objects.create(name="leaky", provider=provider, config=address)
    Agent.objects.filter(name="leaky").update(config={**address, **config})  # no full_clean on this path
    local_server.reply = lambda seen: (200, {"ok": True, "outputs": {}})

    run = start(operator, save_workflow, django_capture_on_commit_callbacks, "leaky")

    remote = steps_of(run)["remote"]
    assert (run.status, remote.status) == ("failed", "failed")
    assert f"agent 'leaky': {key}: 'FORGE_SECRET_KEY' is not an agent secret" in remote.error and RULE in remote.error
    assert not any(SERVER_SECRET in seen.headers.get("authorization", "") for seen in local_server.seen)
    assert local_server.seen == []
    assert SERVER_SECRET not in everything_recorded()


def test_the_openai_key_comes_from_forge_agent_secret_openai_api_key_not_openai_api_key(
        operator, save_workflow, local_server, django_capture_on_commit_callbacks, monkeypatch):
    Agent.objects.create(name="gpt", provider="openai",
                         config={"model": "gpt-4o-mini", "base_url": f"{local_server.url}/v1"})
    local_server.reply = lambda seen: (200, chat_completion("hello"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-for-other-software")
    monkeypatch.delenv("FORGE_AGENT_SECRET_OPENAI_API_KEY", raising=False)

    first = start(operator, save_workflow, django_capture_on_commit_callbacks, "gpt")

    assert first.status == "completed"
    assert "authorization" not in local_server.seen[-1].headers

    monkeypatch.setenv("FORGE_AGENT_SECRET_OPENAI_API_KEY", "sk-for-agents")
    second = start(operator, save_workflow, django_capture_on_commit_callbacks, "gpt")

    assert second.status == "completed"
    assert local_server.seen[-1].headers["authorization"] == "Bearer sk-for-agents"
    assert "sk-for-agents" not in everything_recorded()
