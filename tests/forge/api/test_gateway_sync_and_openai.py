"""The http agent answered at once (200 with the result) and the openai agent, each against a real local server.

The servers are `ThreadingHTTPServer`s on 127.0.0.1 (the `local_server`
fixture): the executors' own HTTP client talks to them, nothing is mocked.
"""

from __future__ import annotations

import json

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django_q.models import Task

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, Gateway, TokenEvent
from forge.runs import services
from forge.runs.models import Checkpoint, Run, RunEvent, RunInput, StepResult
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db

CALLBACK_PATH = "/api/v1/steps/complete"
KEY = "sk-test-forge-Zq8x1-very-secret-key"

HTTP_WORKFLOW = """
name: synced
steps:
  - id: remote
    agent: gw-sync
    command: "summarise the report"
    timeout: 30
    outputs: {summary: {type: string}}
  - id: after
    agent: mock
    command: "file {{ remote.outputs.summary }}"
    outputs: {filed: {type: string}}
    mock: {outputs: {filed: "yes"}}
"""

OPENAI_WORKFLOW = """
name: asked
steps:
  - id: review
    agent: gpt
    command: "review the vendor contract"
    timeout: 30
    outputs:
      verdict: {type: string, enum: [approve, reject]}
      score: {type: number}
      notes: {type: string, required: false}
  - id: after
    agent: mock
    command: "file {{ review.outputs.verdict }}"
    outputs: {filed: {type: string}}
    mock: {outputs: {filed: "yes"}}
"""


def start(user, version, capture) -> Run:
    with capture(execute=True):
        run = services.run_start(user=user, version=version)
    run.refresh_from_db()
    return run



# -- http: the gateway answers with the result ---------------------------------------------------------------------


@pytest.fixture
def http_agent(db, local_server):
    gateway = Gateway(name="gw-sync", url=f"{local_server.url}/steps")
    gateway.set_token()
    gateway.save()
    agent = Agent.objects.create(name="gw-sync", provider="http", config={"url": f"{local_server.url}/steps"})
    AgentGateway.objects.create(agent=agent, gateway=gateway)
    return agent


def test_a_200_from_the_gateway_completes_the_step_without_a_callback(operator, save_workflow, local_server,
                                                                     http_agent, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, {"ok": True, "outputs": {"summary": "short"}, "tokens": 10,
                                             "cost": 0.01})

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed"
    steps = steps_of(run)
    remote = steps["remote"]
    assert remote.status == "completed"
    assert remote.outputs == {"summary": "short"}
    assert (remote.tokens, remote.cost) == (10, pytest.approx(0.01))
    assert remote.lease_owner == "" and remote.executing is False
    assert steps["after"].status == "completed"
    spend = TokenEvent.objects.get(run_id=run.pk, step="remote")
    assert (spend.attempt, spend.tokens, spend.cost) == (1, 10, pytest.approx(0.01))
    assert (spend.agent, spend.workflow) == ("gw-sync", "synced")

    assert len(local_server.seen) == 1
    seen = local_server.seen[0]
    assert seen.path == "/steps"
    assert seen.headers["content-type"] == "application/json"
    sent = seen.json()
    assert str(sent["run_id"]) == str(run.pk)
    assert sent["step"] == "remote"
    assert sent["attempt"] == 1
    assert sent["command"] == "summarise the report"
    assert sent["callback_url"].endswith(CALLBACK_PATH)
    assert sent["callback_url"].startswith("http")
    assert sent["outputs_schema"] == {"summary": {"type": "string"}}
    assert sent["timeout_s"] == 30


def test_the_gateways_failure_status_fails_the_step_with_its_message(operator, save_workflow, local_server,
                                                                      http_agent, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (503, b"overloaded, try later")

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "failed"
    remote = steps_of(run)["remote"]
    assert remote.status == "failed"
    assert remote.error_code == "agent_error"
    assert "503" in remote.error and "overloaded" in remote.error
    assert not TokenEvent.objects.filter(run_id=run.pk).exists()


def test_a_malformed_result_from_the_gateway_fails_the_step(operator, save_workflow, local_server, http_agent,
                                                            django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, {"ok": True, "outputs": {"summary": "x"}, "tokens": -5})

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    remote = steps_of(run)["remote"]
    assert (run.status, remote.status, remote.error_code) == ("failed", "failed", "agent_error")
    assert "tokens" in remote.error


def test_the_agents_url_serves_a_gateway_without_one(operator, save_workflow, local_server, http_agent,
                                                     django_capture_on_commit_callbacks):
    Gateway.objects.filter(name="gw-sync").update(url="")
    local_server.reply = lambda seen: (200, {"ok": True, "outputs": {"summary": "s"}})

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed"
    assert [seen.path for seen in local_server.seen] == ["/steps"]


def test_the_gateway_routing_picked_wins_over_the_agents_url(operator, save_workflow, local_server, http_agent,
                                                             django_capture_on_commit_callbacks):
    Gateway.objects.filter(name="gw-sync").update(url=f"{local_server.url}/via-gateway")
    local_server.reply = lambda seen: (200, {"ok": True, "outputs": {"summary": "s"}})

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed"
    assert [seen.path for seen in local_server.seen] == ["/via-gateway"]


# -- openai: a chat completion ---------------------------------------------------------------------------------------


def chat_completion(content: str, prompt_tokens: int = 1200, completion_tokens: int = 300) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


@pytest.fixture
def openai_agent(db, local_server, monkeypatch):
    monkeypatch.setenv("FORGE_AGENT_SECRET_TEST_OPENAI_KEY", KEY)
    return Agent.objects.create(name="gpt", provider="openai",
                                config={"model": "gpt-4o-mini", "base_url": f"{local_server.url}/v1",
                                        "api_key_env": "FORGE_AGENT_SECRET_TEST_OPENAI_KEY"})


def everything_recorded() -> str:
    """Every row a run leaves, as one text to search."""
    rows = {
        "audit": list(AuditEvent.objects.values()),
        "events": list(RunEvent.objects.values()),
        "steps": list(StepResult.objects.values()),
        "inputs": list(RunInput.objects.values()),
        "checkpoints": list(Checkpoint.objects.values()),
        "runs": list(Run.objects.values()),
        "agents": list(Agent.objects.values()),
        "tasks": [repr((t.func, t.args, t.kwargs, t.result)) for t in Task.objects.all()],
    }
    return json.dumps(rows, cls=DjangoJSONEncoder)


def test_an_openai_step_completes_with_the_models_json_and_its_priced_usage(
        operator, save_workflow, local_server, openai_agent, django_capture_on_commit_callbacks):
    answer = {"verdict": "approve", "score": 0.87, "notes": None}
    local_server.reply = lambda seen: (200, chat_completion(json.dumps(answer)))

    run = start(operator, save_workflow(OPENAI_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed", (run.error, steps_of(run)["review"].error)
    review = steps_of(run)["review"]
    assert review.status == "completed"
    assert review.outputs == answer
    expected_cost = 1200 / 1e6 * 0.15 + 300 / 1e6 * 0.60  # gpt-4o-mini's list price
    assert review.tokens == 1500
    assert review.cost == pytest.approx(expected_cost)
    assert steps_of(run)["after"].status == "completed"
    spend = TokenEvent.objects.get(run_id=run.pk, step="review")
    assert (spend.tokens, spend.agent, spend.workflow) == (1500, "gpt", "asked")
    assert spend.cost == pytest.approx(expected_cost)

    assert len(local_server.seen) == 1
    seen = local_server.seen[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    sent = seen.json()
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"][-1]["role"] == "user"
    assert sent["messages"][-1]["content"].startswith("review the vendor contract")
    wanted = sent["response_format"]
    assert wanted["type"] == "json_schema"
    assert wanted["json_schema"]["name"] == "review"
    assert wanted["json_schema"]["strict"] is True
    assert wanted["json_schema"]["schema"] == {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["approve", "reject"]},
            "score": {"type": "number"},
            "notes": {"type": ["string", "null"]},
        },
        "required": ["verdict", "score", "notes"],
        "additionalProperties": False,
    }

    assert KEY not in everything_recorded()


def test_the_agents_price_table_overrides_the_default(operator, save_workflow, local_server, openai_agent,
                                                      django_capture_on_commit_callbacks):
    openai_agent.config = {**openai_agent.config, "price_per_million": [1.0, 2.0]}
    openai_agent.save()
    local_server.reply = lambda seen: (200, chat_completion(json.dumps({"verdict": "reject", "score": 1, "notes": "n"}),
                                                            prompt_tokens=1_000_000, completion_tokens=500_000))

    run = start(operator, save_workflow(OPENAI_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed"
    spend = TokenEvent.objects.get(run_id=run.pk, step="review")
    assert spend.tokens == 1_500_000
    assert spend.cost == pytest.approx(1.0 + 1.0)


def test_a_reply_that_is_not_the_declared_json_fails_the_step_but_keeps_the_spend(
        operator, save_workflow, local_server, openai_agent, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (200, chat_completion("Sure! I approve this contract."))

    run = start(operator, save_workflow(OPENAI_WORKFLOW), django_capture_on_commit_callbacks)

    review = steps_of(run)["review"]
    assert (run.status, review.status, review.error_code) == ("failed", "failed", "agent_error")
    assert "JSON" in review.error
    spend = TokenEvent.objects.get(run_id=run.pk, step="review")
    assert spend.tokens == 1500 and spend.cost > 0


def test_an_api_error_that_echoes_the_key_is_scrubbed_everywhere(operator, save_workflow, local_server,
                                                                 openai_agent, django_capture_on_commit_callbacks):
    local_server.reply = lambda seen: (401, {"error": {"message": f"Incorrect API key provided: {KEY}",
                                                       "type": "invalid_request_error"}})

    run = start(operator, save_workflow(OPENAI_WORKFLOW), django_capture_on_commit_callbacks)

    review = steps_of(run)["review"]
    assert (run.status, review.status) == ("failed", "failed")
    assert "401" in review.error and "Incorrect API key" in review.error
    assert "[api key]" in review.error
    assert local_server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in everything_recorded()


def test_without_the_key_in_the_environment_no_authorization_is_sent(operator, save_workflow, local_server,
                                                                     openai_agent, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    monkeypatch.delenv("FORGE_AGENT_SECRET_TEST_OPENAI_KEY")
    local_server.reply = lambda seen: (200, chat_completion(json.dumps({"verdict": "approve", "score": 1,
                                                                        "notes": None})))

    run = start(operator, save_workflow(OPENAI_WORKFLOW), django_capture_on_commit_callbacks)

    assert run.status == "completed"
    assert "authorization" not in local_server.seen[0].headers
