"""No secret is written into an agent's or gateway's configuration, where the audit trail would copy it for every
Operator and Approver: refused by the service and the admin at any depth, numbers and secret names kept, and the
rows saved before the rule are listed by `check --deploy` and audited redacted when they change or go."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.governance import services
from forge.governance.checks import literal_secrets_in_configuration
from forge.governance.models import Agent, Gateway
from tests.forge.admin_pages import staff
from tests.forge.governance.test_configuration_audit import AGENT, GATEWAY

pytestmark = pytest.mark.django_db

HOW = "put the secret in a FORGE_AGENT_SECRET_<NAME> environment variable"
SECRET = "sk-abc-literal-0123456789"

REFUSED = [
    ("openai", {"model": "gpt-4o-mini", "api_key": SECRET}, "api_key"),
    ("shell", {"env": {"OPENAI_API_KEY": SECRET}}, "env.OPENAI_API_KEY"),
    ("http", {"url": "https://gateway.example/steps", "headers": {"X-API-Key": SECRET}}, "headers.X-API-Key"),
    ("http", {"request": {"headers": [{"Authorization": f"Bearer {SECRET}"}]}}, "request.headers[0].Authorization"),
    ("python", {"oauth": {"client_secret": SECRET}}, "oauth.client_secret"),
    ("mock", {"refresh_token": SECRET}, "refresh_token"),
    ("openai", {"model": "gpt-4o-mini", "max_tokens": "100"}, "max_tokens"),
    ("http", {"url": f"https://bot:{SECRET}@gateway.example/steps"}, "url"),
    ("http", {"token_env": SECRET}, "token_env"),
    ("shell", {"env": {"PGPASS": SECRET}}, "env.PGPASS"),
    ("shell", {"env": {"PRIVATE_KEY": SECRET}}, "env.PRIVATE_KEY"),
    ("shell", {"env": {"DATABASE_URL": f"postgres://forge:{SECRET}@db/forge"}}, "env.DATABASE_URL"),
    ("shell", {"env": {"CACHE": f" redis://:{SECRET}@cache:6379/0 "}}, "env.CACHE"),
    ("http", {"url": f"https://gateway.example/steps?sig={SECRET}"}, "url"),
    ("http", {"headers": {"Cookie": f"sid={SECRET}"}}, "headers.Cookie"),
]
KEPT = [
    ("openai", {"model": "gpt-4o-mini", "max_tokens": 100, "price_per_million": [0.15, 0.6],
                "api_key_env": "FORGE_AGENT_SECRET_OPENAI"}),
    ("shell", {"env": {"DEPLOY_ENV": "staging", "VERBOSE": "1"}, "secret_env": ["FORGE_AGENT_SECRET_DEPLOY_TOKEN"]}),
    ("http", {"url": "https://gateway.example/steps", "token_env": "FORGE_AGENT_SECRET_GATEWAY",
              "headers": {"Accept": "application/json"}, "token_budget": 5_000, "bearer": True}),
]


def agent_form(provider: str, config: dict) -> dict[str, str]:
    return AGENT.form("keyed", provider=provider, config=json.dumps(config))


@pytest.fixture
def admin(db):
    return staff("adele", "Admins")


@pytest.mark.parametrize(("provider", "config", "path"), REFUSED)
def test_the_service_refuses_a_secret_anywhere_in_an_agents_config_naming_its_path(admin, provider, config, path):
    with pytest.raises(ValidationError) as refused:
        services.config_save(user=admin, instance=Agent(name="keyed", provider=provider, config=config))

    problems = refused.value.message_dict["config"]
    assert any(problem.startswith(f"{path}: ") for problem in problems), problems
    assert SECRET not in " ".join(problems)
    assert not Agent.objects.filter(name="keyed").exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize(("provider", "config", "path"), REFUSED)
def test_the_admin_form_refuses_it_and_says_how_to_give_a_secret(client, admin, provider, config, path):
    client.force_login(admin)

    response = client.post(AGENT.url("add"), agent_form(provider, config))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["config"]
    assert any(error.startswith(f"{path}: ") for error in errors), errors
    assert path == "token_env" or any(HOW in error for error in errors)
    assert not Agent.objects.filter(name="keyed").exists() and not AuditEvent.objects.exists()


def test_changing_an_agent_to_hold_a_secret_is_refused_in_the_admin_and_the_row_stays(client, admin):
    agent = Agent.objects.create(name="keyed", provider="shell", config={"env": {"MODE": "fast"}})
    client.force_login(admin)

    response = client.post(AGENT.url("change", agent.pk),
                           agent_form("shell", {"env": {"MODE": "fast", "GITHUB_TOKEN": SECRET}}))

    assert response.status_code == 200
    assert any(e.startswith("env.GITHUB_TOKEN: ") for e in response.context["adminform"].form.errors["config"])
    agent.refresh_from_db()
    assert agent.config == {"env": {"MODE": "fast"}} and not AuditEvent.objects.exists()


@pytest.mark.parametrize(("provider", "config"), KEPT)
def test_numbers_booleans_and_secret_names_are_saved_and_audited_as_written(client, admin, provider, config):
    client.force_login(admin)

    response = client.post(AGENT.url("add"), agent_form(provider, config))

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Agent.objects.get(name="keyed").config == config
    audited = AuditEvent.objects.get(code="forge.agent.created").detail["after"]["config"]
    # an environment's and headers' values are literals any of which may be a secret: audited redacted
    assert audited == {key: ({name: "[redacted]" for name in value} if key in ("env", "headers") else value)
                       for key, value in config.items()}


def test_a_new_agents_environment_values_and_url_query_are_audited_redacted_and_shown_so(client, admin, operator):
    config = {"env": {"STRIPE": "sk-live-abc123", "MODE": "fast"},
              "base_url": "https://api.example/v1?tenant=acme-internal"}
    services.config_save(user=admin, instance=Agent(name="keyed", provider="shell", config=config))

    created = AuditEvent.objects.get(code="forge.agent.created")
    assert created.detail["after"]["config"] == {"env": {"STRIPE": "[redacted]", "MODE": "[redacted]"},
                                                 "base_url": "https://api.example/v1?[redacted]"}
    assert Agent.objects.get(name="keyed").config == config
    client.force_login(operator)
    html = client.get(reverse("console:audit")).content.decode()
    assert "forge.agent.created" in html and "sk-live-abc123" not in html and "acme-internal" not in html


def test_changing_only_an_environment_value_is_audited_though_both_sides_show_redacted(admin):
    agent = services.config_save(user=admin, instance=Agent(name="keyed", provider="shell",
                                                            config={"env": {"MODE": "fast"}}))
    agent.config = {"env": {"MODE": "slow"}}

    services.config_save(user=admin, instance=agent)

    changed = AuditEvent.objects.get(code="forge.agent.changed")
    assert changed.detail == {"before": {"config": {"env": {"MODE": "[redacted]"}}},
                              "after": {"config": {"env": {"MODE": "[redacted]"}}}}


@pytest.mark.parametrize(("field", "value"), [("url", f"https://bot:{SECRET}@gateway.example/dispatch"),
                                              ("url", f"https://gateway.example/dispatch?access_token={SECRET}"),
                                              ("capabilities", json.dumps([{"api_key": SECRET}]))])
def test_a_gateway_refuses_a_secret_in_its_url_or_capabilities(client, admin, field, value):
    client.force_login(admin)

    response = client.post(GATEWAY.url("add"), GATEWAY.form("edge", **{field: value}))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors[field]
    assert errors and SECRET not in " ".join(errors)
    assert not Gateway.objects.exists() and not AuditEvent.objects.exists()
    with pytest.raises(ValidationError):
        gateway = Gateway(name="edge", url="https://gateway.example/dispatch")
        setattr(gateway, field, json.loads(value) if field == "capabilities" else value)
        services.config_save(user=admin, instance=gateway)


# -- rows saved before the rule ---------------------------------------------------------------------------------------


@pytest.fixture
def old_agent(db):
    """An agent saved with a literal secret before saving refused one (written here around validation)."""
    return Agent.objects.create(name="legacy", provider="shell",
                                config={"env": {"OPENAI_API_KEY": SECRET, "MODE": "fast"}, "api_key": SECRET})


def test_check_deploy_lists_each_row_holding_a_secret_by_path_never_by_value(old_agent):
    Gateway.objects.create(name="edge", url=f"https://bot:{SECRET}@gateway.example/dispatch")
    Agent.objects.create(name="clean", provider="openai", config={"model": "gpt-4o-mini", "max_tokens": 100})

    warnings = literal_secrets_in_configuration(None)

    assert [(w.id, w.msg.split(" holds")[0]) for w in warnings] == [("forge.W101", "agent 'legacy'"),
                                                                     ("forge.W101", "gateway 'edge'")]
    assert "config.env.OPENAI_API_KEY, config.api_key" in warnings[0].msg and "url" in warnings[1].msg
    assert all(SECRET not in w.msg + w.hint for w in warnings)


def test_an_old_row_must_lose_its_secret_to_change_and_the_change_is_audited_redacted(old_agent, admin):
    old_agent.trust_level = 2
    with pytest.raises(ValidationError):
        services.config_save(user=admin, instance=old_agent)

    old_agent.config = {"env": {"MODE": "fast"}, "secret_env": ["FORGE_AGENT_SECRET_OPENAI_API_KEY"]}
    services.config_save(user=admin, instance=old_agent)

    changed = AuditEvent.objects.get(code="forge.agent.changed")
    assert SECRET not in json.dumps(changed.detail)
    assert changed.detail["before"]["config"] == {"env": {"OPENAI_API_KEY": "[redacted]", "MODE": "[redacted]"},
                                                  "api_key": "[redacted]"}


def test_deleting_an_old_row_audits_what_it_held_redacted(old_agent, admin):
    services.config_delete(user=admin, instance=old_agent)

    deleted = AuditEvent.objects.get(code="forge.agent.deleted")
    assert deleted.detail["before"]["config"]["api_key"] == "[redacted]"
    assert SECRET not in json.dumps(deleted.detail)
