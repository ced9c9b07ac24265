"""Hostile replies from a gateway (the http agent's synchronous 200) and from a model API (the openai agent).

A real server on 127.0.0.1 answers with each payload; the executor must end
the step with a clear failure, never raise, and never hand back a value the
databases cannot store (a NUL, an unpaired surrogate, a non-finite number, an
integer past 64 bits) or an unbounded token count.
"""

import json
import threading

import pytest

from engine.executors import HttpExecutor, OpenAIExecutor
from tests.engine.test_executor_http import gateway, request  # noqa: F401 - the fixture
from tests.engine.test_executor_openai import completion
from tests.engine.test_executor_openai import request as openai_request


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def reply(**fields) -> str:
    return json.dumps({"ok": True, "outputs": {"risk": 3}, **fields})


def raw(field: str, literal: str) -> bytes:
    """A reply whose `field` is `literal` as written: NaN, 1e309 and the like, which json.dumps cannot make."""
    return reply(**{field: "@@"}).replace('"@@"', literal).encode()


HOSTILE_REPLIES = {
    "outputs-100000-deep": (raw("outputs", '{"a": ' + nested(100_000) + "}"), "nests deeper than 64 levels"),
    "outputs-65-deep": (raw("outputs", '{"a": ' + nested(64) + "}"), "'outputs' nest deeper than 64 levels"),
    "tokens-over-10**12": (reply(tokens=10**12 + 1).encode(), "'tokens' must be at most 1000000000000"),
    "tokens-2**64": (reply(tokens=2**64).encode(), "'tokens' must be at most"),
    "cost-over-a-million": (reply(cost=1e7).encode(), "'cost' must be at most 1e+06"),
    "cost-1e309": (raw("cost", "1e309"), "'cost' must be a finite number"),
    "cost-NaN": (raw("cost", "NaN"), "'cost' must be a finite number"),
    "outputs-NaN": (raw("outputs", '{"risk": NaN}'), "'outputs' hold a number that is not finite"),
    "outputs-Infinity": (raw("outputs", '{"risk": [1, -Infinity]}'), "'outputs' hold a number that is not finite"),
    "outputs-2**64": (raw("outputs", '{"risk": %d}' % 2**64), "'outputs' hold an integer that does not fit"),
    "outputs-NUL": (reply(outputs={"risk": "a\u0000"}).encode(), "'outputs' hold a string with a NUL"),
    "outputs-NUL-key": (reply(outputs={"r\u0000": 1}).encode(), "'outputs' hold a key with a NUL"),
    "stdout-NUL": (reply(stdout="done\u0000").encode(), "'stdout' holds a NUL character"),
    "stdout-lone-surrogate": (raw("stdout", '"a \\udc00 b"'), "'stdout' holds a NUL character or an unpaired"),
    "error-NUL": (reply(ok=False, error="bad\u0000").encode(), "'error' holds a NUL character"),
    "error-10001-chars": (reply(ok=False, error="e" * 10_001).encode(), "'error' must be at most 10000 characters"),
    "error_code-65-chars": (reply(ok=False, error_code="c" * 65).encode(), "'error_code' must be at most 64"),
    "duplicate-key": (b'{"ok": false, "ok": true, "outputs": {"risk": 3}}', "the key 'ok' appears twice"),
    "5000-digit-integer": (raw("tokens", "9" * 5000), "is not JSON"),
    "another-attempt": (reply(attempt=2).encode(), "'attempt' names another call (2); this call's is 1"),
    "another-step": (reply(step="deploy").encode(), "'step' names another call ('deploy')"),
    "another-run": (reply(run_id="run-2").encode(), "'run_id' names another call ('run-2')"),
    "attempt-2**31": (reply(attempt=2**31).encode(), "'attempt' names another call"),
    "input_tokens-negative": (reply(input_tokens=-1).encode(), "'input_tokens' must be a non-negative integer"),
    "output_tokens-text": (reply(output_tokens="5").encode(), "'output_tokens' must be a non-negative integer"),
    "output_tokens-float": (reply(output_tokens=5.0).encode(), "'output_tokens' must be a non-negative integer"),
    "input_tokens-over-10**12": (reply(input_tokens=10**12 + 1).encode(), "'input_tokens' must be at most"),
    "split-sum-over-10**12": (reply(input_tokens=10**12, output_tokens=1).encode(),
                              "'tokens' input_tokens + output_tokens must be at most"),
    "tokens-not-the-split-sum": (reply(tokens=10, input_tokens=3, output_tokens=4).encode(),
                                 "'tokens' must be input_tokens + output_tokens (7) when all three are given"),
    "tokens-below-one-part": (reply(tokens=2, input_tokens=3).encode(), "'tokens' must be at least input_tokens (3)"),
    "model-10KB": (reply(model="m" * 10_240).encode(), "'model' must be 1 to 128 characters, got 10240"),
    "model-empty": (reply(model="").encode(), "'model' must be 1 to 128 characters, got 0"),
    "model-number": (reply(model=4).encode(), "'model' must be a string, got an integer (4)"),
    "model-NUL": (reply(model="gpt\u0000").encode(), "'model' must be printable text"),
    "model-newline": (reply(model="gpt\nfake log line").encode(), "'model' must be printable text"),
}


@pytest.mark.parametrize("name", list(HOSTILE_REPLIES))
def test_a_hostile_reply_fails_the_step_with_a_clear_agent_error(gateway, name):
    body, says = HOSTILE_REPLIES[name]
    gateway.answer(200, body)

    result = HttpExecutor(gateway.url, egress_allow=gateway.allowed).execute(request(), threading.Event())

    assert (result.ok, result.error_code) == (False, "agent_error"), result
    assert says in result.error
    assert (result.tokens, result.cost, result.outputs) == (0, 0.0, None)
    assert "\x00" not in result.error and len(result.error) < 1000


def test_a_reply_that_echoes_its_own_call_is_read(gateway):
    gateway.answer(200, reply(run_id="run-1", step="review", attempt=1, iteration=0, tokens=10**12, cost=1e6).encode())

    result = HttpExecutor(gateway.url, egress_allow=gateway.allowed).execute(request(), threading.Event())

    assert result.ok and result.outputs == {"risk": 3}
    assert (result.tokens, result.cost) == (10**12, 1e6)


def test_without_ok_a_reply_with_an_error_is_a_failure_as_in_a_callback(gateway):
    gateway.answer(200, {"error": "the model crashed", "tokens": 3})

    result = HttpExecutor(gateway.url, egress_allow=gateway.allowed).execute(request(), threading.Event())

    assert (result.ok, result.error, result.error_code, result.tokens) == (False, "the model crashed", "agent_error",
                                                                            3)


def test_an_error_status_quoting_a_nul_is_reported_without_it(gateway):
    gateway.answer(502, b"upstream \x00 broke")

    result = HttpExecutor(gateway.url, egress_allow=gateway.allowed).execute(request(), threading.Event())

    assert result.error.startswith("gateway answered HTTP 502: upstream")
    assert "\x00" not in result.error


# -- the openai agent ------------------------------------------------------------------------------------------------


def ask(gateway, step=None):
    executor = OpenAIExecutor(gateway.url + "/v1/", "gpt-4o-mini", api_key="sk-test", egress_allow=gateway.allowed)
    return executor.execute(openai_request(step), threading.Event())


DECLARED = {"outputs": {"summary": {"type": "string"}}}


def test_a_model_api_reply_nested_100000_deep_fails_the_step_without_raising(gateway):
    gateway.answer(200, ('{"choices": ' + nested(100_000) + "}").encode())

    result = ask(gateway)

    assert (result.ok, result.error_code) == (False, "agent_error")
    assert "not a JSON object" in result.error


@pytest.mark.parametrize("usage", [{"prompt_tokens": 10**15, "completion_tokens": 0},
                                   {"prompt_tokens": 6 * 10**11, "completion_tokens": 6 * 10**11},
                                   {"prompt_tokens": 2**64, "completion_tokens": 2**64}],
                         ids=["one-count-too-large", "sum-too-large", "past-64-bits"])
def test_an_impossible_token_count_from_the_model_api_counts_nothing(gateway, usage):
    body = completion("fine")
    body["usage"] = usage
    gateway.answer(200, body)

    result = ask(gateway)

    assert result.ok and result.stdout == "fine"
    assert (result.tokens, result.cost) == (0, 0.0)


@pytest.mark.parametrize("content, says", [
    ('{"summary": NaN}', "the model's JSON outputs hold a number that is not finite"),
    ('{"summary": ' + nested(100_000) + "}", "the model did not return JSON"),
    ('{"summary": ' + nested(70) + "}", "the model's JSON outputs nest deeper than 64 levels"),
    ('{"summary": "a\\u0000b"}', "the model's JSON outputs hold a string with a NUL"),
    ('{"summary": "a", "summary": "b"}', "the model did not return JSON"),
], ids=["NaN", "100000-deep", "70-deep", "NUL", "duplicate-key"])
def test_declared_outputs_the_databases_cannot_store_fail_the_step_but_keep_the_spend(gateway, content, says):
    gateway.answer(200, completion(content))

    result = ask(gateway, DECLARED)

    assert (result.ok, result.error_code) == (False, "agent_error")
    assert result.error.startswith(says), result.error
    assert result.outputs is None and result.tokens == 1500


def test_reply_text_with_a_nul_fails_the_step(gateway):
    gateway.answer(200, completion("fine\u0000"))

    result = ask(gateway)

    assert (result.ok, result.error_code) == (False, "agent_error")
    assert "NUL" in result.error and "\x00" not in result.stdout + result.error


def test_an_api_error_quoting_a_nul_is_reported_without_it(gateway):
    gateway.answer(400, {"error": {"message": "bad \u0000 request"}})

    result = ask(gateway)

    assert "400" in result.error and "bad" in result.error and "\x00" not in result.error
