"""`POST /api/v1/steps/complete`: a gateway's callback for a step it accepted with 202.

Every test starts a real run whose first step goes to an http agent; the
agent's URL is a real local HTTP server that answers 202, so the step is left
running and deferred to the gateway. The callback is then posted with
Django's test client.

django-q2 runs tasks inline here, but `run_start` and the round that queues
the step enqueue them with `transaction.on_commit`, which never fires inside
a test's transaction: `django_capture_on_commit_callbacks(execute=True)` runs
them (and the ones they add) at the end of the block.
"""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, Gateway, TokenEvent
from forge.runs import services
from forge.runs.models import Run, RunEvent, RunInput, StepResult
from forge.runtime.leases import Owner
from forge.runtime.recovery import TIMEOUT_GRACE_S, enforce_timeouts
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db

URL = "/api/v1/steps/complete"

WORKFLOW = """
name: gated
steps:
  - id: remote
    agent: gw-agent
    command: "summarise the report"
    timeout: 60
    outputs: {summary: {type: string}}
  - id: after
    agent: mock
    command: "file {{ remote.outputs.summary }}"
    outputs: {filed: {type: string}}
    mock: {outputs: {filed: "yes"}}
"""


@pytest.fixture
def deferred(operator, save_workflow, local_server, django_capture_on_commit_callbacks):
    """A running run whose `remote` step a gateway accepted (202) and has not reported yet."""
    gateway = Gateway(name="gw-one", url=f"{local_server.url}/dispatch")
    token = gateway.set_token()
    gateway.save()
    other = Gateway(name="gw-two", url="http://127.0.0.1:9/")
    other_token = other.set_token()
    other.save()
    AgentGateway.objects.create(gateway=gateway, agent=Agent.objects.create(
        name="gw-agent", provider="http", config={"url": f"{local_server.url}/dispatch"}))
    local_server.reply = lambda seen: (202, {"accepted": True})
    version = save_workflow(WORKFLOW)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=version)
    run.refresh_from_db()
    return SimpleNamespace(run=run, gateway=gateway, token=token, other=other, other_token=other_token,
                           server=local_server, operator=operator,
                           capture=lambda: django_capture_on_commit_callbacks(execute=True))


def body_for(run: Run, **changes) -> dict:
    body = {"run_id": run.pk, "step": "remote", "attempt": 1, "iteration": 0, "ok": True,
            "outputs": {"summary": "all good"}, "stdout": "summary ready", "tokens": 42, "cost": 0.5}
    body.update(changes)
    return body


def post(client, body, token: str | None = None, *, raw: bool = False, **headers):
    data = body if raw else json.dumps(body)
    if token is not None:
        headers.setdefault("HTTP_X_GATEWAY_TOKEN", token)
    return client.post(URL, data, content_type="application/json", **headers)



def snapshot(run: Run) -> dict:
    """Everything a callback could change: row counts and the state of the run and its steps."""
    fields = ("step", "status", "attempt", "iteration", "outputs", "stdout", "error", "error_code", "tokens", "cost",
              "fence", "lease_owner", "executing", "lease_expires_at", "deadline_at", "finished_at")
    return {
        "run_inputs": RunInput.objects.count(),
        "unprocessed": RunInput.objects.filter(processed_at=None).count(),
        "run_events": RunEvent.objects.count(),
        "audit_events": AuditEvent.objects.count(),
        "token_events": TokenEvent.objects.count(),
        "run": Run.objects.filter(pk=run.pk).values("status", "error_code", "inputs_fed", "fences",
                                                    "finished_at").get(),
        "steps": list(StepResult.objects.filter(run=run).order_by("position").values(*fields)),
    }


# -- the deferred step ---------------------------------------------------------------------------------------------


def test_a_202_from_the_gateway_leaves_the_step_running_and_deferred(deferred):
    steps = steps_of(deferred.run)
    assert deferred.run.status == "running"
    assert steps["remote"].status == "running"
    assert steps["remote"].lease_owner == Owner.GATEWAY
    assert steps["remote"].executing is False
    assert steps["remote"].deadline_at is not None
    assert steps["after"].status == "pending"
    assert len(deferred.server.seen) == 1
    sent = deferred.server.seen[0]
    assert sent.path == "/dispatch"
    assert sent.json()["callback_url"].endswith(URL)
    assert not TokenEvent.objects.exists()


# -- a valid callback ----------------------------------------------------------------------------------------------


def test_a_valid_callback_completes_the_step_and_the_run(deferred, client):
    response = post(client, body_for(deferred.run), deferred.token)

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "deduplicated": False, "accepted": True, "outcome": "accepted"}
    run = Run.objects.get(pk=deferred.run.pk)
    assert run.status == "completed"
    steps = steps_of(run)
    remote = steps["remote"]
    assert remote.status == "completed"
    assert remote.outputs == {"summary": "all good"}
    assert remote.stdout == "summary ready"
    assert (remote.tokens, remote.cost) == (42, 0.5)
    assert remote.lease_owner == "" and remote.executing is False
    assert steps["after"].status == "completed"
    assert steps["after"].outputs == {"filed": "yes"}
    spend = TokenEvent.objects.get(run_id=run.pk, step="remote")
    assert (spend.attempt, spend.iteration, spend.tokens, spend.cost) == (1, 0, 42, 0.5)
    assert (spend.agent, spend.workflow) == ("gw-agent", "gated")
    assert RunInput.objects.filter(run=run, key="done:remote:1:0", processed_at__isnull=False).exists()
    assert AuditEvent.objects.filter(run_id=run.pk, code="forge.run.completed").count() == 1


def test_the_token_may_come_as_a_bearer_token(deferred, client):
    response = post(client, body_for(deferred.run), None, HTTP_AUTHORIZATION=f"Bearer {deferred.token}")

    assert response.status_code == 200, response.content
    assert response.json()["accepted"] is True
    assert Run.objects.get(pk=deferred.run.pk).status == "completed"


def test_a_failure_reported_by_the_gateway_fails_the_step_with_agent_error(deferred, client):
    body = body_for(deferred.run, ok=False, outputs=None, stdout="", error="the model crashed", tokens=3, cost=0.01)
    response = post(client, body, deferred.token)

    assert response.status_code == 200, response.content
    assert response.json()["accepted"] is True
    run = Run.objects.get(pk=deferred.run.pk)
    assert run.status == "failed"
    remote = steps_of(run)["remote"]
    assert remote.status == "failed"
    assert remote.error_code == "agent_error"
    assert "the model crashed" in remote.error
    assert TokenEvent.objects.get(run_id=run.pk, step="remote").cost == pytest.approx(0.01)


def test_a_duplicate_callback_is_acknowledged_and_changes_nothing(deferred, client):
    body = body_for(deferred.run)
    first = post(client, body, deferred.token)
    assert first.json()["accepted"] is True
    before = snapshot(deferred.run)

    again = post(client, body, deferred.token)

    assert again.status_code == 200, again.content
    assert again.json() == {"received": True, "deduplicated": True, "accepted": False, "outcome": "deduplicated"}
    assert snapshot(deferred.run) == before
    assert TokenEvent.objects.filter(run_id=deferred.run.pk).count() == 1


def test_a_second_callback_with_other_values_does_not_overwrite_the_first(deferred, client):
    post(client, body_for(deferred.run), deferred.token)
    before = snapshot(deferred.run)

    changed = post(client, body_for(deferred.run, ok=False, outputs=None, error="changed my mind", tokens=999,
                                    cost=9.0), deferred.token)

    assert changed.status_code == 200
    assert changed.json()["deduplicated"] is True
    assert snapshot(deferred.run) == before
    assert steps_of(deferred.run)["remote"].outputs == {"summary": "all good"}


def test_a_result_for_an_attempt_that_was_never_dispatched_is_acknowledged_and_records_no_spend(deferred, client):
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run, attempt=2, tokens=7, cost=0.07), deferred.token)

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "deduplicated": False, "accepted": False,
                               "outcome": "unknown_attempt"}
    after = snapshot(deferred.run)
    assert after["steps"] == before["steps"]
    assert after["run"] == before["run"]
    assert (after["run_inputs"], after["run_events"]) == (before["run_inputs"], before["run_events"])
    assert after["token_events"] == before["token_events"]
    assert AuditEvent.objects.filter(run_id=deferred.run.pk, code="forge.step.unknown_attempt_result").count() == 1
    # the real attempt can still report
    assert post(client, body_for(deferred.run), deferred.token).json()["accepted"] is True


# -- late callbacks ------------------------------------------------------------------------------------------------


def _time_out(deferred):
    deadline = steps_of(deferred.run)["remote"].deadline_at
    assert enforce_timeouts(deadline + timedelta(seconds=TIMEOUT_GRACE_S - 1)) == 0  # within the grace: not yet
    with deferred.capture():
        assert enforce_timeouts(deadline + timedelta(seconds=TIMEOUT_GRACE_S + 1)) == 1
    deferred.run.refresh_from_db()


def test_the_timeout_enforcer_ends_a_deferred_step_whose_callback_never_came(deferred):
    _time_out(deferred)

    assert deferred.run.status == "failed"
    remote = steps_of(deferred.run)["remote"]
    assert remote.status == "timed_out"
    assert remote.error_code == "timeout"
    after = steps_of(deferred.run)["after"]
    assert (after.status, after.error_code) == ("failed", "upstream_failed")


def test_a_callback_after_the_step_timed_out_is_acknowledged_and_changes_no_state(deferred, client):
    _time_out(deferred)
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run), deferred.token)

    assert response.status_code == 200, response.content
    assert response.json()["received"] is True
    assert response.json()["deduplicated"] is True
    assert response.json()["accepted"] is False
    after = snapshot(deferred.run)
    assert after["steps"] == before["steps"]
    assert after["run"] == before["run"]
    assert (after["run_inputs"], after["unprocessed"], after["run_events"]) == \
        (before["run_inputs"], before["unprocessed"], before["run_events"])
    assert steps_of(deferred.run)["remote"].status == "timed_out"
    assert steps_of(deferred.run)["remote"].outputs in (None, {})


def test_a_callback_after_the_step_timed_out_still_records_what_the_gateway_spent(deferred, client):
    _time_out(deferred)

    response = post(client, body_for(deferred.run, tokens=42, cost=0.5), deferred.token)

    assert response.status_code == 200
    spend = TokenEvent.objects.filter(run_id=deferred.run.pk, step="remote", attempt=1).first()
    assert spend is not None and (spend.tokens, spend.cost) == (42, 0.5)


def test_a_callback_for_a_cancelled_run_keeps_only_its_cost(deferred, client):
    with deferred.capture():
        services.run_cancel(user=deferred.operator, run=deferred.run, reason="not needed")
    deferred.run.refresh_from_db()
    assert deferred.run.status == "cancelled"
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run, tokens=42, cost=0.5), deferred.token)

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "deduplicated": False, "accepted": False, "outcome": "run_ended"}
    after = snapshot(deferred.run)
    assert after["run"] == before["run"] and after["run"]["status"] == "cancelled"
    assert after["steps"] == before["steps"]
    assert (after["run_inputs"], after["run_events"]) == (before["run_inputs"], before["run_events"])
    assert after["token_events"] == before["token_events"] + 1
    spend = TokenEvent.objects.get(run_id=deferred.run.pk, step="remote")
    assert (spend.tokens, spend.cost, spend.agent) == (42, 0.5, "gw-agent")
    # the only audit row is the note that a result came after the end
    new_audits = list(AuditEvent.objects.order_by("id").values_list("code", flat=True))[before["audit_events"]:]
    assert new_audits == ["forge.step.result_after_end"]

    settled = snapshot(deferred.run)
    repeated = post(client, body_for(deferred.run, tokens=42, cost=0.5), deferred.token)
    assert repeated.status_code == 200
    assert repeated.json()["outcome"] == "run_ended"
    assert snapshot(deferred.run) == settled


# -- forged callbacks ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers, status", [
    ({}, 401),
    ({"HTTP_X_GATEWAY_TOKEN": "not-the-token"}, 401),
    ({"HTTP_AUTHORIZATION": "Bearer not-the-token"}, 401),
    ({"HTTP_AUTHORIZATION": "Basic Z3c6cHc="}, 401),
    ({"HTTP_X_GATEWAY_TOKEN": ""}, 401),
], ids=["no-token", "wrong-x-gateway-token", "wrong-bearer", "basic-auth", "empty-token"])
def test_a_callback_without_a_valid_token_is_refused_and_changes_nothing(deferred, client, headers, status):
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run), None, **headers)

    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith("/unauthenticated") and response.json()["error"]
    assert response["WWW-Authenticate"]
    assert snapshot(deferred.run) == before


@pytest.mark.parametrize("how", ["x-gateway-token", "bearer"])
def test_another_gateways_token_is_forbidden_for_this_step_and_changes_nothing(deferred, client, how):
    before = snapshot(deferred.run)
    headers = ({"HTTP_X_GATEWAY_TOKEN": deferred.other_token} if how == "x-gateway-token"
               else {"HTTP_AUTHORIZATION": f"Bearer {deferred.other_token}"})

    response = post(client, body_for(deferred.run), None, **headers)

    assert response.status_code == 403, response.content
    assert "gw-two" in response.json()["error"]
    assert snapshot(deferred.run) == before
    # the right gateway can still report afterwards
    assert post(client, body_for(deferred.run), deferred.token).json()["accepted"] is True


def test_a_gateway_added_to_the_agent_after_the_run_started_cannot_report_its_step(
        operator, save_workflow, local_server, client, django_capture_on_commit_callbacks):
    """The agent had no gateways when the run started, so its step went to the agent's own url with no route; a
    gateway an admin adds to the agent afterwards never took it, and must not report it (a run reads its agents'
    gateway lists once, when it starts)."""
    agent = Agent.objects.create(name="plain-agent", provider="http", config={"url": f"{local_server.url}/dispatch"})
    local_server.reply = lambda seen: (202, {"accepted": True})
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(WORKFLOW.replace("gw-agent", "plain-agent")
                                                                      .replace("name: gated", "name: routeless")))
    assert steps_of(run)["remote"].lease_owner == Owner.GATEWAY
    late = Gateway(name="gw-late", url=f"{local_server.url}/dispatch")
    token = late.set_token()
    late.save()
    AgentGateway.objects.create(gateway=late, agent=agent)
    before = snapshot(run)

    response = post(client, body_for(run), token)

    assert response.status_code == 403, response.content
    assert response.json()["error"] == "step 'remote' was not sent to gateway 'gw-late'"
    assert snapshot(run) == before
    # A run from before pinning reads its agents live, gateways included: the agent's gateway may report.
    Run.objects.filter(pk=run.pk).update(pinned={})
    assert post(client, body_for(run), token).json()["accepted"] is True


def test_the_stored_token_hash_is_not_itself_a_token(deferred, client):
    before = snapshot(deferred.run)
    gateway = Gateway.objects.get(pk=deferred.gateway.pk)
    assert gateway.token_hash and deferred.token not in gateway.token_hash

    response = post(client, body_for(deferred.run), gateway.token_hash)

    assert response.status_code == 401
    assert snapshot(deferred.run) == before


# -- malformed callbacks -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"this is not json", b"{\"run_id\": 1,", b"", b"\xff\xfe\x00"],
                         ids=["text", "truncated", "empty", "binary"])
def test_a_body_that_is_not_json_is_a_400_and_changes_nothing(deferred, client, raw):
    before = snapshot(deferred.run)

    response = post(client, raw, deferred.token, raw=True)

    assert response.status_code == 400, response.content
    assert response.json()["error"]
    assert snapshot(deferred.run) == before


@pytest.mark.parametrize("raw", ["[]", "[{\"run_id\": 1}]", "null", "42", "\"text\""],
                         ids=["empty-array", "array", "null", "number", "string"])
def test_json_that_is_not_an_object_is_a_400_and_changes_nothing(deferred, client, raw):
    before = snapshot(deferred.run)

    response = post(client, raw, deferred.token, raw=True)

    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["error"]
    assert isinstance(payload.get("details"), list) and payload["details"]
    assert snapshot(deferred.run) == before


def _without(name):
    return lambda body: {k: v for k, v in body.items() if k != name}


def _with(**changes):
    return lambda body: {**body, **changes}


MALFORMED = {
    "missing-run_id": (_without("run_id"), "run_id"),
    "missing-step": (_without("step"), "step"),
    "missing-attempt": (_without("attempt"), "attempt"),
    "attempt-as-string": (_with(attempt="1"), "attempt"),
    "attempt-zero": (_with(attempt=0), "attempt"),
    "attempt-float": (_with(attempt=1.5), "attempt"),
    "run_id-not-digits": (_with(run_id="1x"), "run_id"),
    "ok-as-string": (_with(ok="true"), "ok"),
    "ok-as-int": (_with(ok=1), "ok"),
    "tokens-negative": (_with(tokens=-1), "tokens"),
    "tokens-float": (_with(tokens=1.5), "tokens"),
    "tokens-huge": (_with(tokens=10**13), "tokens"),
    "cost-nan-string": (_with(cost="NaN"), "cost"),
    "cost-string": (_with(cost="0.5"), "cost"),
    "cost-negative": (_with(cost=-0.01), "cost"),
    "cost-huge": (_with(cost=1e300), "cost"),
    "cost-bool": (_with(cost=True), "cost"),
    "outputs-array": (_with(outputs=["a"]), "outputs"),
    "step-empty": (_with(step=""), "step"),
    "step-too-long": (_with(step="s" * 65), "step"),
    "iteration-negative": (_with(iteration=-1), "iteration"),
    "error-too-long": (_with(error="e" * 10_001), "error"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_body_that_is_not_a_step_result_is_a_400_with_readable_details(deferred, client, name):
    change, field = MALFORMED[name]
    before = snapshot(deferred.run)

    response = post(client, change(body_for(deferred.run)), deferred.token)

    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["error"] == "the body is not a step result"
    details = payload["details"]
    assert isinstance(details, list) and details and all(isinstance(line, str) for line in details)
    assert any(line.startswith(f"{field}:") for line in details), details
    assert snapshot(deferred.run) == before


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_cost_literal_is_a_400(deferred, client, literal):
    before = snapshot(deferred.run)
    text = json.dumps(body_for(deferred.run, cost=0.5)).replace("0.5", literal)
    assert literal in text

    response = post(client, text, deferred.token, raw=True)

    assert response.status_code == 400, response.content
    assert any(line.startswith("cost:") for line in response.json()["details"])
    assert snapshot(deferred.run) == before


def test_several_problems_are_all_listed(deferred, client):
    body = body_for(deferred.run, attempt="1", tokens=-1, cost="0.5", surprise=1)
    del body["step"]

    response = post(client, body, deferred.token)

    assert response.status_code == 400
    fields = {line.split(":", 1)[0] for line in response.json()["details"]}
    assert {"attempt", "tokens", "cost", "step"} <= fields
    assert "surprise" not in fields  # unknown fields are ignored, as in a synchronous reply


def test_a_body_over_two_mib_is_a_413_and_changes_nothing(deferred, client):
    before = snapshot(deferred.run)
    body = body_for(deferred.run, stdout="x" * (2 * 1_048_576 + 10))

    response = post(client, body, deferred.token)

    assert response.status_code == 413, response.content
    assert snapshot(deferred.run) == before


def test_a_body_over_two_and_a_half_mib_is_also_a_413(deferred, client):
    body = body_for(deferred.run, stdout="x" * (3 * 1_048_576))

    response = post(client, body, deferred.token)

    assert response.status_code == 413, response.content


def test_a_too_large_body_without_a_token_is_a_401(deferred, client):
    response = post(client, body_for(deferred.run, stdout="x" * (2 * 1_048_576 + 10)), None)

    assert response.status_code == 401


# -- unknown targets -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["run", "step"])
def test_an_unknown_run_or_step_is_a_404_and_changes_nothing(deferred, client, target):
    before = snapshot(deferred.run)
    body = body_for(deferred.run, run_id=deferred.run.pk + 1000) if target == "run" \
        else body_for(deferred.run, step="no-such-step")

    response = post(client, body, deferred.token)

    assert response.status_code == 404, response.content
    assert response.json()["error"]
    assert snapshot(deferred.run) == before


def test_a_step_of_a_mock_agent_is_not_this_gateways_to_report(deferred, client):
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run, step="after", outputs={"filed": "forged"}), deferred.token)

    assert response.status_code == 403, response.content
    assert snapshot(deferred.run) == before


# -- the contract with a real gateway ------------------------------------------------------------------------------


def test_a_gateway_that_echoes_the_dispatch_it_received_is_accepted(deferred, client):
    sent = deferred.server.seen[0].json()
    body = {"run_id": sent["run_id"], "step": sent["step"], "attempt": sent["attempt"],
            "iteration": sent["iteration"], "ok": True, "outputs": {"summary": "echoed"}}

    response = post(client, body, deferred.token)

    assert response.status_code == 200, response.content
    assert response.json()["accepted"] is True


# -- methods -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_other_methods_are_405(deferred, client, method):
    before = snapshot(deferred.run)

    response = getattr(client, method)(URL, HTTP_X_GATEWAY_TOKEN=deferred.token)

    assert response.status_code == 405
    assert snapshot(deferred.run) == before


def test_get_without_a_token_is_also_405(db, client):
    assert client.get(URL).status_code == 405
