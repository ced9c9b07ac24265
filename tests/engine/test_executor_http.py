"""The `http` agent against a real gateway: a local HTTP server started by the tests."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.executors import HttpExecutor, StepRequest, StepResult
from engine.executors.httpcall import check_headers
from engine.model import Step


class Gateway:
    """A server on 127.0.0.1 that records each request and answers with the reply set by `answer`."""

    def __init__(self):
        self.requests = []
        self.status, self.body, self.delay_s, self.content_length = 200, b"{}", 0.0, True
        self.release = threading.Event()
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                gateway.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if gateway.delay_s and gateway.release.wait(gateway.delay_s):
                    return
                self.send_response(gateway.status)
                self.send_header("Content-Type", "application/json")
                if gateway.content_length:
                    self.send_header("Content-Length", str(len(gateway.body)))
                self.end_headers()
                try:
                    self.wfile.write(gateway.body)
                except OSError:
                    pass  # the client stopped reading: an oversize reply

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda *args: None
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def allowed(self):
        """The egress allow-list that lets an agent reach this loopback server."""
        return [f"127.0.0.1:{self.server.server_address[1]}"]

    def answer(self, status=200, body=None, *, delay_s=0.0, content_length=True):
        if not isinstance(body, bytes):
            body = json.dumps({} if body is None else body).encode()
        self.status, self.body, self.delay_s, self.content_length = status, body, delay_s, content_length

    @property
    def sent(self):
        """The JSON body of the last request."""
        return json.loads(self.requests[-1]["body"])

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway():
    server = Gateway()
    yield server
    server.close()


def request(step=None, *, command="review the diff", agent="http", **extra):
    spec = Step.model_validate({"id": "review", "agent": agent, "command": command, **(step or {})})
    return StepRequest(run_id="run-1", step="review", attempt=1, agent=agent, command=command, spec=spec, **extra)


def call(executor, *, step=None, cancel=None, **extra):
    return executor.execute(request(step, **extra), cancel or threading.Event())


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- replies -----------------------------------------------------------------------------------


def test_a_200_reply_becomes_the_result(gateway):
    gateway.answer(200, {"ok": True, "outputs": {"risk": 3}, "stdout": "done", "tokens": 120, "cost": 0.02})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result == StepResult(ok=True, outputs={"risk": 3}, stdout="done", tokens=120, cost=0.02)


def test_a_201_reply_is_a_result_too(gateway):
    gateway.answer(201, {"outputs": {"v": 1}})
    assert call(HttpExecutor(gateway.url, egress_allow=gateway.allowed)).outputs == {"v": 1}


def test_ok_defaults_to_true_and_stdout_to_the_json_of_the_outputs(gateway):
    gateway.answer(200, {"outputs": {"note": "café", "n": 2}})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.ok and result.error is None
    assert json.loads(result.stdout) == {"note": "café", "n": 2} and "café" in result.stdout


def test_an_empty_object_reply_succeeds_with_no_outputs(gateway):
    gateway.answer(200, {})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.ok and result.outputs == {} and result.stdout == "{}"


def test_a_reported_failure_keeps_its_error_and_code(gateway):
    gateway.answer(200, {"ok": False, "error": "the agent is busy", "error_code": "agent_busy", "tokens": 4})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert (result.ok, result.error, result.error_code, result.tokens) == (False, "the agent is busy", "agent_busy", 4)
    assert result.outputs is None


def test_a_reported_failure_without_details_is_an_agent_error_with_a_message(gateway):
    gateway.answer(200, {"ok": False})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and result.error_code == "agent_error" and result.error


def test_it_defers_on_202(gateway):
    gateway.answer(202, b"")
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result == StepResult.accepted()
    assert result.deferred


def test_a_500_fails_with_the_status_and_the_start_of_the_body(gateway):
    gateway.answer(500, b"internal trouble " + b"x" * 1000)
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and result.error_code == "agent_error"
    assert result.error.startswith("gateway answered HTTP 500: internal trouble")
    assert len(result.error) < 260


def test_a_404_without_a_body_names_only_the_status(gateway):
    gateway.answer(404, b"")
    assert call(HttpExecutor(gateway.url, egress_allow=gateway.allowed)).error == "gateway answered HTTP 404"


@pytest.mark.parametrize("body, says", [
    (b"<html>oops</html>", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "must be a JSON object, got an array"),
    (b'"done"', "must be a JSON object, got a string"),
])
def test_a_body_that_is_not_a_json_object_is_an_agent_error(gateway, body, says):
    gateway.answer(200, body)
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and result.error_code == "agent_error"
    assert says in result.error


@pytest.mark.parametrize("field, value, says", [
    ("ok", "yes", "'ok' must be a boolean, got a string"),
    ("outputs", [1], "'outputs' must be an object, got an array"),
    ("stdout", 3, "'stdout' must be a string, got an integer"),
    ("error", {"m": 1}, "'error' must be a string, got an object"),
    ("error_code", False, "'error_code' must be a string, got a boolean"),
    ("tokens", -1, "'tokens' must be a non-negative integer, got an integer (-1)"),
    ("tokens", 1.5, "'tokens' must be a non-negative integer, got a number (1.5)"),
    ("tokens", True, "'tokens' must be a non-negative integer, got a boolean"),
    ("cost", -0.5, "'cost' must be a non-negative number, got a number (-0.5)"),
    ("cost", "0.1", "'cost' must be a non-negative number, got a string"),
])
def test_a_field_of_the_wrong_type_is_an_agent_error_naming_the_field(gateway, field, value, says):
    gateway.answer(200, {"ok": True, field: value})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and result.error_code == "agent_error"
    assert says in result.error


def test_a_non_finite_cost_is_refused(gateway):
    gateway.answer(200, b'{"cost": NaN}')
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and "'cost'" in result.error


def test_null_fields_take_their_defaults_and_unknown_fields_are_ignored(gateway):
    gateway.answer(200, {"outputs": None, "stdout": None, "tokens": None, "trace_id": "abc"})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.ok and result.outputs == {} and result.tokens == 0


@pytest.mark.parametrize("fields, kept", [
    ({"model": "claude-x", "input_tokens": 30, "output_tokens": 12, "tokens": 42}, ("claude-x", 30, 12, 42)),
    ({"input_tokens": 30, "output_tokens": 12}, (None, 30, 12, 42)),
    ({"tokens": 42, "input_tokens": 30}, (None, 30, 12, 42)),
    ({"tokens": 42, "output_tokens": 12}, (None, 30, 12, 42)),
    ({"tokens": 42}, (None, 0, 0, 42)),
    ({"model": "m" * 128}, ("m" * 128, 0, 0, 0)),
], ids=["all", "split-only", "total-and-input", "total-and-output", "total-only", "128-char-model"])
def test_a_reply_keeps_the_model_that_answered_and_the_token_split(gateway, fields, kept):
    gateway.answer(200, {"outputs": {"risk": 2}, **fields})
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.ok and (result.model, result.input_tokens, result.output_tokens, result.tokens) == kept


def test_the_payload_sends_the_steps_agent_config(gateway):
    gateway.answer(200, {"outputs": {}})
    executor = HttpExecutor(gateway.url, egress_allow=gateway.allowed)
    call(executor, agent_config={"model": "big", "temperature": 0.5})
    assert gateway.sent["agent_config"] == {"model": "big", "temperature": 0.5}
    call(executor)
    assert gateway.sent["agent_config"] == {}


@pytest.mark.parametrize("content_length", [True, False])
def test_a_reply_larger_than_one_mebibyte_is_refused(gateway, content_length):
    gateway.answer(200, b'{"stdout": "' + b"x" * 1_048_576 + b'"}', content_length=content_length)
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert not result.ok and result.error_code == "agent_error"
    assert result.error == "reply larger than 1 MiB"


def test_a_reply_just_under_the_bound_is_read_whole(gateway):
    gateway.answer(200, b'{"stdout": "' + b"x" * 1_000_000 + b'"}', content_length=False)
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.ok and len(result.stdout) == 1_000_000


# -- what is sent ------------------------------------------------------------------------------


def test_the_body_describes_the_step_call(gateway):
    executor = HttpExecutor(gateway.url + "/steps?v=1", callback_url="https://forge.example/callback/abc",
                            egress_allow=gateway.allowed)
    step = {"outputs": {"risk": {"type": "integer"}, "summary": {"type": "string"}, "any": {}}}
    call(executor, step=step, stdin="the diff", inputs={"pr": 42}, timeout_s=30.0, iteration=2,
         previous_output="last time")
    assert gateway.requests[-1]["path"] == "/steps?v=1"
    assert gateway.sent == {
        "run_id": "run-1", "step": "review", "attempt": 1, "iteration": 2, "agent": "http",
        "command": "review the diff", "stdin": "the diff", "inputs": {"pr": 42}, "timeout_s": 30.0,
        "previous_output": "last time",
        "outputs_schema": {"risk": {"type": "integer"}, "summary": {"type": "string"}, "any": {}},
        "callback_url": "https://forge.example/callback/abc", "agent_config": {},
    }


def test_a_step_without_outputs_sends_an_empty_schema_and_a_null_callback(gateway):
    call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert gateway.sent["outputs_schema"] == {} and gateway.sent["callback_url"] is None
    assert gateway.sent["stdin"] is None


def test_the_json_content_type_and_the_configured_headers_are_sent(gateway):
    executor = HttpExecutor(gateway.url, headers={"Authorization": "Bearer s3cret", "X-Tenant": "acme",
                                                  "content-type": "text/plain"}, egress_allow=gateway.allowed)
    call(executor)
    headers = gateway.requests[-1]["headers"]
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer s3cret" and headers["X-Tenant"] == "acme"


@pytest.mark.parametrize("headers", [{"Authorization": "Bearer s3cret\r\nX-Evil: 1"}, {"Bad Name": "s3cret"}])
def test_an_invalid_header_is_refused_without_showing_its_value(headers):
    with pytest.raises(ValueError) as caught:
        check_headers(headers)
    assert "s3cret" not in str(caught.value)
    with pytest.raises(ValueError):
        HttpExecutor("http://127.0.0.1:1", headers=headers)


@pytest.mark.parametrize("url", ["ftp://example.com/", "/relative", "http://", "http://host:99999/"])
def test_a_url_that_is_not_absolute_http_is_refused(url):
    with pytest.raises(ValueError):
        HttpExecutor(url)


# -- unreachable, timeout, cancel --------------------------------------------------------------


def test_a_refused_connection_is_gateway_unreachable():
    port = closed_port()
    result = call(HttpExecutor(f"http://127.0.0.1:{port}/", headers={"Authorization": "Bearer s3cret"},
                               egress_allow=[f"127.0.0.1:{port}"]))
    assert not result.ok and result.error_code == "gateway_unreachable"
    assert "127.0.0.1:" in result.error and "s3cret" not in result.error


def test_an_unknown_host_is_gateway_unreachable():
    result = call(HttpExecutor("http://forge-gateway.invalid/steps"), timeout_s=20)
    assert not result.ok and result.error_code == "gateway_unreachable"


def test_a_gateway_slower_than_the_step_timeout_times_out(gateway):
    gateway.answer(200, {}, delay_s=600)
    started = time.monotonic()
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed), timeout_s=0.5)
    assert time.monotonic() - started < 300  # the reply would take 600 s
    assert not result.ok and result.error_code == "timeout" and "0.5 s" in result.error


def test_cancel_returns_at_once_without_waiting_for_the_reply(gateway):
    gateway.answer(200, {}, delay_s=600)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed), cancel=cancel, timeout_s=60)
    assert time.monotonic() - started < 30  # the reply would take 600 s, the timeout 60 s
    assert not result.ok and result.error_code == "cancelled"


def test_a_cancel_already_set_sends_nothing(gateway):
    cancel = threading.Event()
    cancel.set()
    assert call(HttpExecutor(gateway.url, egress_allow=gateway.allowed), cancel=cancel).error_code == "cancelled"
    assert gateway.requests == []


def test_the_abandoned_call_thread_ends_soon_after_a_cancel(gateway):
    gateway.answer(200, {}, delay_s=600)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    call(HttpExecutor(gateway.url, egress_allow=gateway.allowed), cancel=cancel, timeout_s=60)
    deadline = time.monotonic() + 2
    while any(t.name == "forge-http-call" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(t.name == "forge-http-call" for t in threading.enumerate())


def test_an_oversize_error_reply_is_still_reported_by_its_status(gateway):
    gateway.answer(500, b"e" * 2_000_000)
    result = call(HttpExecutor(gateway.url, egress_allow=gateway.allowed))
    assert result.error.startswith("gateway answered HTTP 500: eee")
