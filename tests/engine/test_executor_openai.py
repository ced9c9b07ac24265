"""The `openai` agent against a real OpenAI-compatible server: a local HTTP server started by the tests."""

import threading
import time

import pytest

from engine.executors import OpenAIExecutor, StepRequest
from engine.executors.openai import DEFAULT_PRICES
from engine.model import Step
from tests.engine.test_executor_http import closed_port, gateway  # noqa: F401 - the fixture

KEY = "sk-test-0123456789abcdef"


def request(step=None, *, command="Summarise the change.", **extra):
    spec = Step.model_validate({"id": "summarise", "agent": "openai", "command": command, **(step or {})})
    return StepRequest(run_id="run-1", step="summarise", attempt=1, agent="openai", command=command, spec=spec,
                       **extra)


def completion(content, *, prompt_tokens=1000, completion_tokens=500, refusal=None):
    message = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def ask(gateway, *, step=None, cancel=None, model="gpt-4o-mini", api_key=KEY, **options):
    extra = {key: options.pop(key) for key in ("stdin", "inputs", "timeout_s", "agent_config") if key in options}
    executor = OpenAIExecutor(gateway.url + "/v1/", model, api_key=api_key, egress_allow=gateway.allowed, **options)
    return executor.execute(request(step, **extra), cancel or threading.Event())


# -- the request -------------------------------------------------------------------------------


def test_it_posts_to_chat_completions_with_the_bearer_key(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway)
    sent = gateway.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    assert sent["headers"]["Content-Type"] == "application/json"


def test_without_max_tokens_the_reply_is_not_capped(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway)
    assert "max_completion_tokens" not in gateway.sent


def test_the_reply_is_capped_at_what_the_prompt_leaves_of_max_tokens(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway, max_tokens=10_000, system_prompt="Be brief.")
    sent = gateway.sent
    prompt_bytes = sum(len(m["content"].encode()) for m in sent["messages"])
    assert 0 < sent["max_completion_tokens"] <= 10_000 - prompt_bytes
    assert sent["max_completion_tokens"] >= 10_000 - prompt_bytes - 100  # the framing is a few tokens a message


def test_a_prompt_that_may_use_all_of_max_tokens_fails_without_calling_the_model(gateway):
    gateway.answer(200, completion("fine"))
    result = ask(gateway, max_tokens=50, stdin="x" * 100)
    assert not result.ok and result.error_code == "agent_error" and "max_tokens (50)" in result.error
    assert gateway.requests == []


def test_without_a_key_no_authorization_header_is_sent(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway, api_key=None)
    assert "Authorization" not in gateway.requests[-1]["headers"]


def test_the_user_message_is_the_command_then_stdin_then_the_inputs_as_json(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway, stdin="diff --git a b", inputs={"pr": 42, "title": "café"}, system_prompt="You review code.")
    assert gateway.sent["model"] == "gpt-4o-mini"
    assert gateway.sent["messages"] == [
        {"role": "system", "content": "You review code."},
        {"role": "user",
         "content": 'Summarise the change.\n\ndiff --git a b\n\nInputs (JSON): {"pr": 42, "title": "café"}'},
    ]


def test_a_step_without_outputs_sends_only_the_user_message_and_no_response_format(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway)
    assert gateway.sent == {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Summarise the change."}]}


def test_declared_outputs_ask_for_a_strict_json_schema(gateway):
    gateway.answer(200, completion("{}"))
    outputs = {"summary": {"type": "string"}, "risk": {"type": "integer"}, "score": {"type": "number"},
               "blocking": {"type": "boolean"}, "files": {"type": "array"}, "meta": {"type": "object"}}
    ask(gateway, step={"outputs": outputs})
    assert gateway.sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "summarise", "strict": True,
        "schema": {"type": "object", "properties": {name: {"type": spec["type"]} for name, spec in outputs.items()},
                   "required": list(outputs), "additionalProperties": False}}}


def test_items_enums_untyped_and_optional_outputs_are_carried_into_the_schema(gateway):
    gateway.answer(200, completion("{}"))
    outputs = {"tags": {"type": "array", "items": {"type": "string"}},
               "verdict": {"type": "string", "enum": ["approve", "reject"]},
               "note": {}, "link": {"type": "string", "required": False}}
    ask(gateway, step={"outputs": outputs})
    schema = gateway.sent["response_format"]["json_schema"]["schema"]
    assert schema["properties"] == {
        "tags": {"type": "array", "items": {"type": "string"}},
        "verdict": {"type": "string", "enum": ["approve", "reject"]},
        "note": {"type": "string"},
        "link": {"type": ["string", "null"]},
    }
    assert schema["required"] == ["tags", "verdict", "note", "link"]


# -- the reply ---------------------------------------------------------------------------------


def test_without_outputs_the_reply_text_is_the_stdout(gateway):
    gateway.answer(200, completion("Looks good.\nShip it."))
    result = ask(gateway)
    assert result.ok and result.stdout == "Looks good.\nShip it." and result.outputs == {}


def test_with_outputs_the_json_reply_becomes_the_outputs(gateway):
    content = '{"summary": "small fix", "risk": 2}'
    gateway.answer(200, completion(content))
    result = ask(gateway, step={"outputs": {"summary": {"type": "string"}, "risk": {"type": "integer"}}})
    assert result.ok and result.outputs == {"summary": "small fix", "risk": 2}
    assert result.stdout == content


@pytest.mark.parametrize("content", ["Sure! The risk is 2.", "[1, 2]", '{"risk": 2'])
def test_with_outputs_a_reply_that_is_not_a_json_object_fails(gateway, content):
    gateway.answer(200, completion(content))
    result = ask(gateway, step={"outputs": {"risk": {"type": "integer"}}})
    assert not result.ok and result.error_code == "agent_error"
    assert "did not return JSON" in result.error
    assert result.stdout == content and result.tokens == 1500


def test_usage_becomes_tokens_and_a_cost_from_the_price_table(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=2_000_000, completion_tokens=500_000))
    result = ask(gateway, model="house-model", prices={"house-model": (1.0, 4.0)})
    assert result.tokens == 2_500_000
    assert result.cost == pytest.approx(2 * 1.0 + 0.5 * 4.0)


def test_the_default_prices_are_used_when_none_are_given(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=1_000_000, completion_tokens=1_000_000))
    result = ask(gateway, model="gpt-4o")
    assert DEFAULT_PRICES["gpt-4o"] == (2.50, 10.00)
    assert result.cost == pytest.approx(12.50)


def test_a_model_without_a_price_costs_nothing_but_still_counts_tokens(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=10, completion_tokens=5))
    result = ask(gateway, model="local-llama")
    assert (result.tokens, result.cost) == (15, 0.0)


def test_a_reply_without_usage_counts_zero(gateway):
    body = completion("fine")
    del body["usage"]
    gateway.answer(200, body)
    result = ask(gateway)
    assert result.ok and (result.tokens, result.cost) == (0, 0.0)


def test_a_refusal_fails_with_the_refusal_text(gateway):
    gateway.answer(200, completion(None, refusal="I can't help with that."))
    result = ask(gateway, step={"outputs": {"risk": {"type": "integer"}}})
    assert not result.ok and result.error == "the model refused: I can't help with that."


@pytest.mark.parametrize("body", [{"choices": []}, {"choices": [{"message": "hi"}]}, {}, [1]])
def test_a_reply_without_a_message_fails(gateway, body):
    gateway.answer(200, body)
    result = ask(gateway)
    assert not result.ok and result.error_code == "agent_error"


# -- errors ------------------------------------------------------------------------------------


def test_a_401_names_the_status_and_the_api_message_but_never_the_key(gateway):
    gateway.answer(401, {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}})
    result = ask(gateway)
    assert not result.ok and result.error_code == "agent_error"
    assert result.error.startswith("the model API answered HTTP 401: Incorrect API key provided")
    assert KEY not in result.error and KEY not in repr(result)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limits_and_server_errors_fail_with_the_status_and_a_bounded_message(gateway, status):
    gateway.answer(status, {"error": {"message": "slow down " * 100}})
    result = ask(gateway)
    assert not result.ok and result.error_code == "agent_error"
    assert f"HTTP {status}: slow down" in result.error
    assert len(result.error) < 360


def test_an_error_without_a_json_body_shows_the_start_of_the_body(gateway):
    gateway.answer(502, b"<html>Bad Gateway</html>")
    assert ask(gateway).error == "the model API answered HTTP 502: <html>Bad Gateway</html>"


def test_the_key_never_appears_in_the_executor_repr():
    assert KEY not in repr(OpenAIExecutor("https://api.example/v1", "gpt-4o", api_key=KEY))


def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it():
    with pytest.raises(ValueError) as caught:
        OpenAIExecutor("https://api.example/v1", "gpt-4o", api_key="sk-bad\nkey")
    assert "sk-bad" not in str(caught.value)


def test_a_refused_connection_is_gateway_unreachable():
    port = closed_port()
    executor = OpenAIExecutor(f"http://127.0.0.1:{port}/v1", "gpt-4o-mini", api_key=KEY,
                              egress_allow=[f"127.0.0.1:{port}"])
    result = executor.execute(request(), threading.Event())
    assert not result.ok and result.error_code == "gateway_unreachable" and KEY not in result.error


def test_a_slow_api_times_out_at_the_step_timeout(gateway):
    gateway.answer(200, completion("late"), delay_s=600)
    started = time.monotonic()
    result = ask(gateway, timeout_s=0.5)
    assert time.monotonic() - started < 300  # the reply would take 600 s
    assert not result.ok and result.error_code == "timeout"


def test_cancel_returns_without_waiting_for_the_model(gateway):
    gateway.answer(200, completion("late"), delay_s=600)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = ask(gateway, cancel=cancel, timeout_s=60)
    assert time.monotonic() - started < 30  # the reply would take 600 s, the timeout 60 s
    assert not result.ok and result.error_code == "cancelled"


# -- telemetry: the model that answered and the token split --------------------------------------------------------


def test_an_attempt_keeps_the_model_that_answered_and_the_token_split(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=1200, completion_tokens=300))
    result = ask(gateway, model="house-model", prices={"house-model": (1.0, 4.0)})
    assert (result.model, result.input_tokens, result.output_tokens, result.tokens) == (
        "gpt-4o-mini-2024-07-18", 1200, 300, 1500)
    assert result.cost == pytest.approx(1200 / 1e6 + 300 * 4 / 1e6)
    event = result.event(request(), at=1.0)
    assert (event.model, event.input_tokens, event.output_tokens, event.tokens) == ("gpt-4o-mini-2024-07-18", 1200,
                                                                                    300, 1500)


def test_a_failed_attempt_keeps_its_telemetry_too(gateway):
    gateway.answer(200, completion("not json", prompt_tokens=10, completion_tokens=5))
    result = ask(gateway, step={"outputs": {"risk": {"type": "integer"}}})
    assert not result.ok and (result.model, result.input_tokens, result.output_tokens) == (
        "gpt-4o-mini-2024-07-18", 10, 5)


def test_a_larger_total_tokens_is_kept_and_a_smaller_one_is_not_believed(gateway):
    body = completion("fine", prompt_tokens=10, completion_tokens=5)
    body["usage"]["total_tokens"] = 40  # e.g. tokens the API counts beside the two parts
    gateway.answer(200, body)
    assert ask(gateway).tokens == 40
    body["usage"]["total_tokens"] = 3
    gateway.answer(200, body)
    assert ask(gateway).tokens == 15


@pytest.mark.parametrize("model", [None, "", 42, ["gpt"], "m" * 10_000, "gpt\n4", "gpt\u0000"],
                         ids=["null", "empty", "number", "array", "10KB", "newline", "NUL"])
def test_a_malformed_answered_model_is_not_kept_and_the_step_still_succeeds(gateway, model):
    body = completion("fine")
    body["model"] = model
    gateway.answer(200, body)
    result = ask(gateway)
    assert result.ok and result.model is None and result.tokens == 1500


# -- agent_config: the step's overlay of the agent's settings ------------------------------------------------------


def test_a_step_agent_config_overlays_model_temperature_reasoning_effort_and_max_tokens(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=1_000_000, completion_tokens=0))
    overlay = {"model": "gpt-4.1", "temperature": 0.2, "reasoning_effort": "high", "max_tokens": 2000}
    result = ask(gateway, max_tokens=10_000, agent_config=overlay)
    sent = gateway.sent
    assert (sent["model"], sent["temperature"], sent["reasoning_effort"]) == ("gpt-4.1", 0.2, "high")
    assert 1900 < sent["max_completion_tokens"] <= 2000
    assert result.cost == pytest.approx(DEFAULT_PRICES["gpt-4.1"][0])  # priced as the model asked for


def test_without_agent_config_the_agent_settings_are_sent_unchanged(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway, max_tokens=10_000)
    sent = gateway.sent
    assert sent["model"] == "gpt-4o-mini" and "temperature" not in sent and "reasoning_effort" not in sent
    assert sent["max_completion_tokens"] > 9000


def test_agent_config_max_tokens_never_raises_the_agents(gateway):
    gateway.answer(200, completion("fine"))
    ask(gateway, max_tokens=1000, agent_config={"max_tokens": 50_000})
    assert gateway.sent["max_completion_tokens"] <= 1000


def test_an_overlay_model_without_a_price_is_priced_as_the_agents_model(gateway):
    gateway.answer(200, completion("fine", prompt_tokens=1_000_000, completion_tokens=0))
    result = ask(gateway, model="house-model", prices={"house-model": (3.0, 4.0)},
                 agent_config={"model": "house-model-large"})
    assert gateway.sent["model"] == "house-model-large" and result.cost == pytest.approx(3.0)
