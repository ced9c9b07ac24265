"""Per-step agent settings (`agent_config`, spec 15) checked when a run starts against what its agent allows, and
each attempt's telemetry (the model that answered, input/output/total tokens, cost) kept in the run's events and
its TokenEvent, from an OpenAI-compatible reply and from a gateway's callback.

The OpenAI-compatible API and the gateway are real local servers on 127.0.0.1 (the `local_server` fixture).
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.governance import services as governance
from forge.governance.models import Agent, TokenEvent
from forge.runs import services
from forge.runs.models import Run, RunEvent
from tests.forge.admin_pages import staff
from tests.forge.api.test_gateway_sync_and_openai import KEY, chat_completion
from tests.forge.api.test_step_complete import body_for, deferred, post  # noqa: F401 - the fixture
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db

WORKFLOW = """
name: tuned
steps:
  - id: draft
    agent: gpt
    command: "draft the release notes"
    timeout: 30
    agent_config: {model: gpt-4.1, temperature: 0.2, max_tokens: 4000}
  - id: plain
    agent: gpt
    command: "plain greeting"
    timeout: 30
"""


@pytest.fixture
def gpt(db, local_server, monkeypatch):
    monkeypatch.setenv("FORGE_AGENT_SECRET_TEST_OPENAI_KEY", KEY)
    return Agent.objects.create(name="gpt", provider="openai", overridable=["model", "temperature", "max_tokens"],
                                config={"model": "gpt-4o-mini", "base_url": f"{local_server.url}/v1",
                                        "api_key_env": "FORGE_AGENT_SECRET_TEST_OPENAI_KEY", "max_tokens": 8000})


def start(user, version, capture) -> Run:
    with capture(execute=True):
        run = services.run_start(user=user, version=version)
    run.refresh_from_db()
    return run


def sent_by_step(local_server) -> dict:
    return {seen.json()["messages"][-1]["content"].split()[0]: seen.json() for seen in local_server.seen}


# -- agent_config within what the agent allows ---------------------------------------------------------------------


def test_a_step_overlays_the_keys_its_agent_allows_and_the_other_step_keeps_the_agents(
        operator, save_workflow, local_server, gpt, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, chat_completion("done"))

    run = start(operator, save_workflow(WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed", run.error
    sent = sent_by_step(local_server)
    assert (sent["draft"]["model"], sent["draft"]["temperature"]) == ("gpt-4.1", 0.2)
    assert 3900 < sent["draft"]["max_completion_tokens"] <= 4000
    assert sent["plain"]["model"] == "gpt-4o-mini" and "temperature" not in sent["plain"]
    assert sent["plain"]["max_completion_tokens"] > 7900


@pytest.mark.parametrize("overridable, overlay, says", [
    (["model"], "{model: gpt-4.1, temperature: 0.2}",
     "agent_config_refused: step 'draft' sets agent_config.temperature, which agent 'gpt' does not let a step "
     "override (it allows model)"),
    ([], "{reasoning_effort: high}",
     "agent_config_refused: step 'draft' sets agent_config.reasoning_effort, which agent 'gpt' does not let a step "
     "override (it allows none)"),
    (["max_tokens"], "{max_tokens: 8001}",
     "agent_config_refused: step 'draft' sets agent_config.max_tokens to 8001, above agent 'gpt''s max_tokens (8000)"),
], ids=["key-not-overridable", "nothing-overridable", "max_tokens-above-the-agents"])
def test_a_step_setting_what_its_agent_does_not_allow_refuses_the_run_and_creates_nothing(
        operator, save_workflow, gpt, overridable, overlay, says, django_capture_on_commit_callbacks):
    Agent.objects.filter(pk=gpt.pk).update(overridable=overridable)
    version = save_workflow(f"""
name: tuned
steps:
  - {{id: draft, agent: gpt, command: draft, agent_config: {overlay}}}
""")
    audits = AuditEvent.objects.count()

    with pytest.raises(services.ServiceError) as refused, django_capture_on_commit_callbacks(execute=True):
        services.run_start(user=operator, version=version)

    assert str(refused.value) == says
    assert not Run.objects.exists() and AuditEvent.objects.count() == audits


def test_max_tokens_equal_to_the_agents_is_allowed(operator, save_workflow, gpt, local_server,
                                                   django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, chat_completion("done"))
    version = save_workflow("name: tuned\nsteps:\n  - {id: draft, agent: gpt, command: draft, "
                            "agent_config: {max_tokens: 8000}}\n")
    assert start(operator, version, django_capture_on_commit_callbacks).status == "completed"


def test_a_restart_checks_the_overlay_against_the_agent_as_its_source_run_pinned_it(
        operator, save_workflow, local_server, gpt, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, chat_completion("done"))
    run = start(operator, save_workflow(WORKFLOW), django_capture_on_commit_callbacks)
    Agent.objects.filter(pk=gpt.pk).update(overridable=[])  # narrowed after the run started: new runs only

    with django_capture_on_commit_callbacks(execute=True):
        again = services.run_restart(user=operator, run=run, step="draft")
    with pytest.raises(services.ServiceError, match="agent_config_refused"):
        services.run_start(user=operator, version=run.version)

    again.refresh_from_db()
    assert again.status == "completed"


def test_a_sub_workflow_whose_step_is_refused_fails_the_parent_step_with_the_reason(
        operator, save_workflow, gpt, django_capture_on_commit_callbacks):
    Agent.objects.filter(pk=gpt.pk).update(overridable=[])
    save_workflow("name: child_flow\nsteps:\n  - {id: draft, agent: gpt, command: draft, "
                  "agent_config: {temperature: 1}}\n")
    parent = save_workflow("name: parent_flow\nsteps:\n  - {id: delegate, workflow_ref: {name: child_flow}}\n")

    run = start(operator, parent, django_capture_on_commit_callbacks)

    delegate = steps_of(run)["delegate"]
    assert (run.status, delegate.status) == ("failed", "failed")
    assert "agent_config_refused: step 'draft' sets agent_config.temperature" in delegate.error
    assert Run.objects.count() == 1


@pytest.mark.parametrize("value, says", [
    (["top_p"], "'top_p' is not an agent_config key"),
    (["model", "model"], "names a key twice"),
    ("model", "must be a list of agent_config keys"),
    ({"model": True}, "must be a list of agent_config keys"),
    ([1], "'1' is not an agent_config key"),
])
def test_an_agents_overridable_must_list_agent_config_keys(admin_user, value, says):
    agent = Agent(name="picky", provider="mock", overridable=value)
    with pytest.raises(ValidationError) as refused:
        governance.config_save(user=admin_user, instance=agent)
    assert says in str(refused.value.message_dict["overridable"])
    assert not Agent.objects.filter(name="picky").exists()


def test_the_agent_admin_form_lists_the_overridable_keys_as_checkboxes(client):
    client.force_login(staff("adele", "Admins"))
    form = {"name": "writer", "provider": "mock", "config": "{}", "routes-TOTAL_FORMS": "0",
            "routes-INITIAL_FORMS": "0", "enabled": "on", "status": "active", "role": "", "trust_level": "1",
            "required_context_trust": "0", "estimated_cost": "0", "overridable": ["temperature", "model"]}

    page = client.get(reverse("admin:forge_governance_agent_add"))
    saved = client.post(reverse("admin:forge_governance_agent_add"), form)
    refused = client.post(reverse("admin:forge_governance_agent_add"), {**form, "name": "w2", "overridable": "top_p"})

    text = page.content.decode()
    for key in ("model", "reasoning_effort", "temperature", "max_tokens"):
        assert f'type="checkbox" name="overridable" value="{key}"' in text
    assert saved.status_code == 302
    assert Agent.objects.get(name="writer").overridable == ["model", "temperature"]  # in the keys' order
    assert refused.status_code == 200 and not Agent.objects.filter(name="w2").exists()
    assert "top_p is not one of the available choices" in refused.content.decode()


# -- telemetry ------------------------------------------------------------------------------------------------------


def finished_events(run: Run, step: str) -> list[dict]:
    return [data for data in RunEvent.objects.filter(run=run, step=step, kind="input").values_list("data", flat=True)
            if data.get("type") == "StepFinished"]


def test_an_openai_attempt_keeps_the_model_that_answered_and_its_token_split(
        operator, save_workflow, local_server, gpt, django_capture_on_commit_callbacks):
    def reply(seen):
        body = chat_completion("done", prompt_tokens=1200, completion_tokens=300)
        body["model"] = "gpt-4.1-2025-04-14"  # the snapshot that answered the step asking for gpt-4.1
        return 200, body

    local_server.reply = reply

    run = start(operator, save_workflow(WORKFLOW), django_capture_on_commit_callbacks)

    spend = TokenEvent.objects.get(run_id=run.pk, step="draft")
    assert (spend.model, spend.input_tokens, spend.output_tokens, spend.tokens) == ("gpt-4.1-2025-04-14", 1200, 300,
                                                                                   1500)
    assert spend.cost == pytest.approx(1200 * 2.0 / 1e6 + 300 * 8.0 / 1e6)  # gpt-4.1's list price, as asked
    [event] = finished_events(run, "draft")
    assert (event["model"], event["input_tokens"], event["output_tokens"], event["tokens"]) == (
        "gpt-4.1-2025-04-14", 1200, 300, 1500)
    assert event["cost"] == pytest.approx(spend.cost)


def test_a_gateway_callback_keeps_the_model_and_the_token_split(deferred, client):
    response = post(client, body_for(deferred.run, model="claude-x", input_tokens=30, output_tokens=12, tokens=42),
                    deferred.token)

    assert response.status_code == 200, response.content
    spend = TokenEvent.objects.get(run_id=deferred.run.pk, step="remote")
    assert (spend.model, spend.input_tokens, spend.output_tokens, spend.tokens) == ("claude-x", 30, 12, 42)
    [event] = finished_events(deferred.run, "remote")
    assert (event["model"], event["input_tokens"], event["output_tokens"], event["tokens"]) == ("claude-x", 30, 12, 42)


def test_a_callback_with_only_the_split_counts_its_sum_as_the_total(deferred, client):
    body = body_for(deferred.run, input_tokens=30, output_tokens=12)
    del body["tokens"]

    assert post(client, body, deferred.token).status_code == 200

    spend = TokenEvent.objects.get(run_id=deferred.run.pk, step="remote")
    assert (spend.model, spend.input_tokens, spend.output_tokens, spend.tokens) == ("", 30, 12, 42)


@pytest.mark.parametrize("changes, field", [
    ({"model": "m" * 10_240}, "model"),
    ({"model": 7}, "model"),
    ({"input_tokens": -1}, "input_tokens"),
    ({"output_tokens": 2**64}, "output_tokens"),
    ({"input_tokens": "30"}, "input_tokens"),
    ({"input_tokens": 30, "output_tokens": 12, "tokens": 43}, "tokens"),
], ids=["model-10KB", "model-number", "input-negative", "output-2**64", "input-text", "inconsistent-total"])
def test_hostile_telemetry_in_a_callback_is_refused_and_records_nothing(deferred, client, changes, field):
    before = (TokenEvent.objects.count(), RunEvent.objects.count())

    response = post(client, body_for(deferred.run, **changes), deferred.token)

    assert response.status_code == 400
    assert any(detail.startswith(f"{field}:") for detail in response.json()["details"]), response.json()
    assert (TokenEvent.objects.count(), RunEvent.objects.count()) == before
    assert steps_of(deferred.run)["remote"].status == "running"


def test_a_steps_own_model_is_reserved_at_its_list_price_when_that_is_higher():
    from types import SimpleNamespace

    from engine.model import Step
    from forge.governance.reservations import projected_cost

    agent = SimpleNamespace(provider="openai", estimated_cost=0.0, config={"model": "gpt-4o-mini", "max_tokens": 10_000})
    plain = Step.model_validate({"id": "a", "agent": "gpt", "command": "go"})
    bigger = Step.model_validate({"id": "a", "agent": "gpt", "command": "go", "agent_config": {"model": "gpt-4o"}})
    capped = Step.model_validate({"id": "a", "agent": "gpt", "command": "go",
                                  "agent_config": {"model": "gpt-4o", "max_tokens": 1000}})
    assert projected_cost(agent, plain) == pytest.approx(10_000 * 0.60 / 1e6)
    assert projected_cost(agent, bigger) == pytest.approx(10_000 * 10.00 / 1e6)  # gpt-4o's output price
    assert projected_cost(agent, capped) == pytest.approx(max(1000 * 10.00, 10_000 * 0.60) / 1e6)
