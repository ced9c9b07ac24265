"""`POST /api/v1/steps/complete` against a hostile gateway: bodies of every shape, and spend for attempts
that were never sent.

A gateway holds a valid token, so it can send anything: every body must get a
JSON answer (never a 500, never Django's HTML page), and only an attempt that
governance really dispatched to this gateway's agent may record spend. These
tests also run on PostgreSQL (tests/cluster/test_console_on_postgres.py runs
tests/forge there), where an out-of-range integer or a NUL character used to
be a database error.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager
from datetime import timedelta
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from forge.audit.models import AuditEvent
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, TokenEvent
from forge.runs import services
from forge.runtime.recovery import TIMEOUT_GRACE_S, enforce_timeouts
from tests.forge.api.test_step_complete import URL, body_for, deferred, post, snapshot  # noqa: F401 - the fixture
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db

MIB = 1_048_576


def body_text(run, **changes) -> str:
    return json.dumps(body_for(run, **changes))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def with_raw(run, field: str, raw_value: str) -> str:
    """A body whose `field` is `raw_value` written as is (a literal json.dumps cannot make)."""
    return body_text(run, **{field: "@@"}).replace('"@@"', raw_value)


# (a function of the run giving the body text or bytes, the field the answer must name)
HOSTILE = {
    "outputs-100000-deep": (lambda run: with_raw(run, "outputs", '{"a": ' + nested(100_000) + "}"), "body"),
    "outputs-65-deep": (lambda run: with_raw(run, "outputs", '{"a": ' + nested(64) + "}"), "outputs"),
    "unknown-field-100000-deep": (lambda run: with_raw(run, "trace", nested(100_000)), "body"),
    "attempt-2**31": (lambda run: body_text(run, attempt=2**31), "attempt"),
    "attempt-2**63": (lambda run: body_text(run, attempt=2**63), "attempt"),
    "iteration-2**31": (lambda run: body_text(run, iteration=2**31), "iteration"),
    "run_id-2**63": (lambda run: body_text(run, run_id=2**63), "run_id"),
    "run_id-2**64-as-text": (lambda run: body_text(run, run_id=str(2**64)), "run_id"),
    "run_id-5000-digits": (lambda run: with_raw(run, "run_id", "9" * 5000), "body"),
    "tokens-over-10**12": (lambda run: body_text(run, tokens=10**12 + 1), "tokens"),
    "tokens-2**64": (lambda run: body_text(run, tokens=2**64), "tokens"),
    "cost-1e9": (lambda run: body_text(run, cost=1e9), "cost"),
    "cost-1e309": (lambda run: with_raw(run, "cost", "1e309"), "cost"),
    "cost-NaN": (lambda run: with_raw(run, "cost", "NaN"), "cost"),
    "cost--Infinity": (lambda run: with_raw(run, "cost", "-Infinity"), "cost"),
    "outputs-NaN": (lambda run: with_raw(run, "outputs", '{"summary": NaN}'), "outputs"),
    "outputs-1e999": (lambda run: with_raw(run, "outputs", '{"summary": "s", "n": 1e999}'), "outputs"),
    "outputs-2**64": (lambda run: with_raw(run, "outputs", '{"summary": "s", "n": %d}' % 2**64), "outputs"),
    "outputs-NUL-string": (lambda run: body_text(run, outputs={"summary": "a\u0000b"}), "outputs"),
    "outputs-NUL-key": (lambda run: body_text(run, outputs={"summary": "s", "k\u0000": 1}), "outputs"),
    "outputs-over-1-MiB": (lambda run: body_text(run, outputs={"summary": "x" * (MIB + 1)}, stdout=""), "outputs"),
    "stdout-NUL": (lambda run: body_text(run, stdout="done\u0000"), "stdout"),
    "stdout-lone-surrogate": (lambda run: with_raw(run, "stdout", '"bad \\ud800 text"'), "stdout"),
    "stdout-over-1-MiB": (lambda run: body_text(run, stdout="x" * (MIB + 1)), "stdout"),
    "error-NUL": (lambda run: body_text(run, ok=False, error="boom\u0000"), "error"),
    "error_code-65-chars": (lambda run: body_text(run, ok=False, error_code="c" * 65), "error_code"),
    "step-NUL": (lambda run: body_text(run, step="remote\u0000"), "step"),
    "duplicate-cost-key": (lambda run: body_text(run, cost=0.5)[:-1] + ', "cost": 999999}', "body"),
    "invalid-utf8": (lambda run: body_text(run, stdout="@@").encode().replace(b"@@", b"\xff\xfe"), "body"),
    "empty": (lambda run: b"", "body"),
    "whitespace": (lambda run: b"  \n ", "body"),
    "array-root": (lambda run: json.dumps([body_for(run)]), "body"),
    "null-root": (lambda run: "null", "body"),
    "number-root": (lambda run: "1e999", "body"),
    "attempt-as-text": (lambda run: body_text(run, attempt="1"), "attempt"),
    "attempt-float": (lambda run: body_text(run, attempt=1.0), "attempt"),
    "attempt-true": (lambda run: body_text(run, attempt=True), "attempt"),
    "run_id-object": (lambda run: body_text(run, run_id={"id": run.pk}), "run_id"),
    "ok-as-text": (lambda run: body_text(run, ok="false"), "ok"),
    "outputs-as-text": (lambda run: body_text(run, outputs="{}"), "outputs"),
    "tokens-float": (lambda run: body_text(run, tokens=1.5), "tokens"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_body_is_a_400_problem_naming_the_problem_and_changes_nothing(deferred, client, name):
    make, field = HOSTILE[name]
    before = snapshot(deferred.run)

    response = post(client, make(deferred.run), deferred.token, raw=True)

    assert response.status_code == 400, response.content[:500]
    assert response["Content-Type"] == "application/problem+json"
    payload = response.json()
    assert payload["type"].endswith("/bad-request") and payload["status"] == 400
    assert payload["error"] == payload["detail"] == "the body is not a step result"
    assert any(line.startswith(f"{field}:") for line in payload["details"]), payload["details"]
    assert len(json.dumps(payload)) < 5000  # a message, not an echo of the body
    assert snapshot(deferred.run) == before
    # the gateway can still report the real result
    assert post(client, body_for(deferred.run), deferred.token).json()["accepted"] is True


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_body_sent_under_another_content_type_is_read_as_json_all_the_same(deferred, client, content_type):
    assert client.post(URL, "run_id=1&ok=true", content_type=content_type,
                       HTTP_X_GATEWAY_TOKEN=deferred.token).status_code == 400
    before = snapshot(deferred.run)

    response = client.post(URL, body_text(deferred.run), content_type=content_type,
                           HTTP_X_GATEWAY_TOKEN=deferred.token)

    assert response.status_code == 200, response.content[:500]
    assert response.json()["accepted"] is True
    assert snapshot(deferred.run) != before


def test_unknown_fields_are_ignored_and_only_a_few_of_their_names_are_logged(deferred, client, caplog):
    body = body_for(deferred.run)
    body.update({f"field_{n}": "secret-value" for n in range(5000)})
    body["x" * 5000] = 1

    with caplog.at_level("INFO", logger="engine.executors.gateway_result"):
        response = post(client, body, deferred.token)

    assert response.status_code == 200, response.content[:500]
    assert response.json()["accepted"] is True
    logged = [r.getMessage() for r in caplog.records if r.name == "engine.executors.gateway_result"]
    assert len(logged) == 1
    assert "5001 unknown field(s)" in logged[0] and "'field_0'" in logged[0]
    assert "secret-value" not in logged[0] and len(logged[0]) < 1000


# -- one rule with the synchronous reply ---------------------------------------------------------------------------


def test_without_ok_a_result_with_an_error_is_a_failure(deferred, client):
    body = body_for(deferred.run, outputs=None, stdout=None, error="the model crashed")
    del body["ok"]

    response = post(client, body, deferred.token)

    assert response.status_code == 200, response.content
    remote = steps_of(deferred.run)["remote"]
    assert (remote.status, remote.error_code) == ("failed", "agent_error")
    assert "the model crashed" in remote.error


def test_without_ok_or_stdout_a_result_succeeds_and_its_stdout_is_the_outputs_as_json(deferred, client):
    body = body_for(deferred.run, outputs={"summary": "café"})
    del body["ok"], body["stdout"]

    response = post(client, body, deferred.token)

    assert response.status_code == 200, response.content
    remote = steps_of(deferred.run)["remote"]
    assert remote.status == "completed"
    assert json.loads(remote.stdout) == {"summary": "café"}


# -- spend only for attempts that were dispatched -------------------------------------------------------------------


@pytest.mark.parametrize("call", [{"attempt": 2}, {"attempt": 2**31 - 1}, {"attempt": 1, "iteration": 3}],
                         ids=["attempt-2", "attempt-2**31-1", "iteration-3"])
def test_a_result_for_an_attempt_never_dispatched_is_acknowledged_and_records_no_spend(deferred, client, call):
    before = snapshot(deferred.run)

    response = post(client, body_for(deferred.run, tokens=10**6, cost=1_000_000, **call), deferred.token)

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "deduplicated": False, "accepted": False,
                               "outcome": "unknown_attempt"}
    after = snapshot(deferred.run)
    assert after["token_events"] == before["token_events"] == 0
    assert (after["run"], after["steps"]) == (before["run"], before["steps"])
    assert (after["run_inputs"], after["run_events"]) == (before["run_inputs"], before["run_events"])
    noted = AuditEvent.objects.get(code="forge.step.unknown_attempt_result")
    assert (noted.run_id, noted.step, noted.attempt, noted.target) == \
        (deferred.run.pk, "remote", call["attempt"], "gateway:gw-one")
    # the real attempt still reports, and its spend is the only one
    assert post(client, body_for(deferred.run), deferred.token).json()["accepted"] is True
    assert list(TokenEvent.objects.values_list("attempt", "cost")) == [(1, 0.5)]


@pytest.mark.parametrize("cost", [1e9, 1_000_000])
def test_a_forged_attempt_with_a_huge_cost_leaves_every_budget_untouched(deferred, client, save_workflow, cost):
    for scope in ("org", "workflow:gated", "agent:gw-agent"):
        BudgetEnvelope.objects.create(name=f"cap {scope}", scope=scope, limit=10.0, monthly=True)
    Agent.objects.filter(name="gw-agent").update(monthly_budget=10.0)

    forged = post(client, body_for(deferred.run, attempt=2, tokens=10**9, cost=cost), deferred.token)

    assert forged.status_code in (200, 400), forged.content
    assert forged.json().get("outcome") in (None, "unknown_attempt")
    assert not TokenEvent.objects.exists()
    # a budget that a forged spend had exhausted would block the next run's first dispatch
    with deferred.capture():
        second = services.run_start(user=deferred.operator, version=deferred.run.version)
    remote = steps_of(second)["remote"]
    assert (remote.status, remote.error_code) == ("running", None)
    assert not AuditEvent.objects.filter(code="forge.governance.blocked").exists()


RETRIED = """
name: retried
steps:
  - id: remote
    agent: gw-agent
    command: "summarise the report"
    timeout: 60
    retry: {max_retries: 1, backoff_s: 0}
    outputs: {summary: {type: string}}
"""


@pytest.fixture
def retried(operator, save_workflow, local_server, django_capture_on_commit_callbacks):
    """Attempt 1 of `remote` was sent, timed out, and attempt 2 was sent: both to this gateway."""
    gateway = Gateway(name="gw-one", url=f"{local_server.url}/dispatch")
    token = gateway.set_token()
    gateway.save()
    AgentGateway.objects.create(gateway=gateway, agent=Agent.objects.create(
        name="gw-agent", provider="http", config={"url": f"{local_server.url}/dispatch"}))
    local_server.reply = lambda seen: (202, {"accepted": True})
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(RETRIED))
    deadline = steps_of(run)["remote"].deadline_at
    with django_capture_on_commit_callbacks(execute=True):
        assert enforce_timeouts(deadline + timedelta(seconds=TIMEOUT_GRACE_S + 1)) == 1
    run.refresh_from_db()
    assert [seen.json()["attempt"] for seen in local_server.seen] == [1, 2]
    assert (steps_of(run)["remote"].status, steps_of(run)["remote"].attempt) == ("running", 2)
    return SimpleNamespace(run=run, token=token)


def test_a_late_result_of_an_earlier_dispatched_attempt_is_acknowledged_and_keeps_its_spend(retried, client):
    before = snapshot(retried.run)

    response = post(client, body_for(retried.run, attempt=1, tokens=42, cost=0.5), retried.token)

    assert response.status_code == 200, response.content
    assert response.json()["outcome"] == "deduplicated"  # the timeout already ended attempt 1
    after = snapshot(retried.run)
    assert (after["run"], after["steps"]) == (before["run"], before["steps"])
    spend = TokenEvent.objects.get(run_id=retried.run.pk)
    assert (spend.attempt, spend.iteration, spend.tokens, spend.cost) == (1, 0, 42, 0.5)
    # the attempt in flight completes the run
    assert post(client, body_for(retried.run, attempt=2), retried.token).json()["accepted"] is True
    assert sorted(TokenEvent.objects.values_list("attempt", flat=True)) == [1, 2]


# -- bodies too large, with or without a Content-Length --------------------------------------------------------------


@contextmanager
def connections_kept():
    """What Django's test client does: the test's transaction must outlive the request's signals."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def asgi_post(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, bytes]:
    """POST through the real ASGI application as daphne drives it: the body in `more_body` chunks, as a
    chunked request without Content-Length arrives."""
    from forge.asgi import application

    messages = [{"type": "http.request", "body": chunk, "more_body": True} for chunk in chunks]
    messages.append({"type": "http.request", "body": b"", "more_body": False})
    sent: list[dict] = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Future()  # the client stays connected until the response is sent

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    with connections_kept():
        async_to_sync(application)(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body


def chunked(data: bytes, size: int = 65536) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_a_chunked_ten_mib_body_without_content_length_is_a_413_problem(deferred):
    before = snapshot(deferred.run)
    data = body_text(deferred.run, stdout="x" * (10 * MIB)).encode()

    status, headers, body = asgi_post(URL, chunked(data), [(b"content-type", b"application/json"),
                                                           (b"transfer-encoding", b"chunked"),
                                                           (b"x-gateway-token", deferred.token.encode())])

    assert status == 413, body[:300]
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["error"] == "the body is larger than 2 MiB"
    assert snapshot(deferred.run) == before


def test_a_chunked_body_within_the_bound_is_read_and_recorded(deferred):
    data = body_text(deferred.run, stdout="y" * MIB).encode()

    status, _, body = asgi_post(URL, chunked(data), [(b"content-type", b"application/json"),
                                                     (b"x-gateway-token", deferred.token.encode())])

    assert status == 200, body[:300]
    assert json.loads(body)["accepted"] is True
    assert steps_of(deferred.run)["remote"].stdout == "y" * MIB


def test_a_declared_content_length_over_the_bound_is_a_413_problem_before_the_body_is_read(deferred):
    data = body_text(deferred.run, stdout="x" * (3 * MIB)).encode()

    status, headers, body = asgi_post(URL, chunked(data), [(b"content-type", b"application/json"),
                                                           (b"content-length", str(len(data)).encode()),
                                                           (b"x-gateway-token", deferred.token.encode())])

    assert status == 413, body[:300]
    assert headers["content-type"] == "application/problem+json"
    assert "2 MiB" in json.loads(body)["error"]
