"""The `openai` agent: one chat completion from an OpenAI-compatible API per step call.

The step's command (then its stdin and inputs) is the user message. A step
that declares outputs asks for a strict JSON schema, and its reply must be a
JSON object; usage becomes input, output and total tokens and, from a price
table, cost in USD, and the reply's `model` names the model that answered.
A step's `agent_config` (already checked against what the agent allows when
the run started) overlays the agent's model, temperature, max_tokens and
reasoning_effort for its calls. The API key never appears in a result: the
API may echo it in an error message, so errors are scrubbed of it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from engine.executors.base import StepRequest, StepResult
from engine.executors.gateway_result import (MAX_COST, MAX_TOKENS, MAX_TEXT, Malformed, clean_text, load_json,
                                             model_problem, outputs_problem, text_problem)
from engine.executors.egress import allow_list
from engine.executors.httpcall import Reply, check_headers, check_url, post_json
from engine.model import OutputSchema

# USD per million tokens, (input, output), at the vendor's list prices.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-nano": (0.10, 0.40),
}
_ERROR_CHARS = 300
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def output_json_schema(schema: OutputSchema) -> dict[str, Any]:
    """The JSON schema of one declared output.

    An untyped output is asked for as a string (the engine's default type);
    an optional one may be null, strict mode's way of saying "may be absent".
    """
    prop: dict[str, Any] = {"type": schema.type or "string"}
    if schema.type == "array" and schema.items is not None:
        prop["items"] = {"type": schema.items.type}
    if schema.enum is not None:
        prop["enum"] = list(schema.enum)
    if not schema.required:
        prop["type"] = [prop["type"], "null"]
        if "enum" in prop:
            prop["enum"].append(None)
    return prop


def response_format(request: StepRequest) -> dict[str, Any] | None:
    """The `response_format` asking for the step's outputs, or None when it declares none."""
    outputs = request.spec.outputs
    if not outputs:
        return None
    return {"type": "json_schema", "json_schema": {
        "name": _SCHEMA_NAME.sub("_", request.step)[:64] or "outputs",
        "strict": True,
        "schema": {"type": "object", "properties": {name: output_json_schema(s) for name, s in outputs.items()},
                   "required": list(outputs), "additionalProperties": False},
    }}


def user_message(request: StepRequest) -> str:
    """The command, then the stdin after a blank line, then the inputs as one line of JSON."""
    text = request.command
    if request.stdin:
        text += "\n\n" + request.stdin
    if request.inputs:
        text += "\n\nInputs (JSON): " + json.dumps(request.inputs, ensure_ascii=False, sort_keys=True)
    return text


# Per message and per request, what the chat format adds around the texts (a few tokens; taken generously).
_FRAMING_TOKENS = 16


def reply_cap(body: Mapping[str, Any], max_tokens: int) -> int:
    """The most reply tokens that keep a call within `max_tokens` in all: a byte-level BPE token stands for at
    least one byte, so the prompt's UTF-8 bytes (and the response format's, which the API adds to it) bound its
    tokens. Below 1: the prompt may use everything."""
    prompt = sum(len(m["content"].encode("utf-8")) + _FRAMING_TOKENS for m in body["messages"]) + _FRAMING_TOKENS
    if "response_format" in body:
        prompt += len(json.dumps(body["response_format"]).encode("utf-8"))
    return max_tokens - prompt


class OpenAIExecutor:
    """Calls `{base_url}/chat/completions` of an OpenAI-compatible API.

    Args:
        base_url: such as "https://api.openai.com/v1".
        model: the model asked for, and the key of its price.
        api_key: sent as a Bearer token; None (or "") sends no Authorization header.
        prices: USD per million (input, output) tokens by model; None means `DEFAULT_PRICES`.
            A model without a price costs 0.0.
        system_prompt: sent as a system message before the user message.
        max_tokens: the most tokens one call may use, prompt and reply (the agent's budget reservation is
            this at the higher price); the reply is capped at what the prompt leaves (`reply_cap`).
        egress_allow: "host:port" entries that may be reached although non-public (`egress.allow_list`).

    Raises:
        ValueError: a base URL that is not absolute http(s), a key that cannot be sent in a header, or an
            invalid allow-list entry.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None,
                 prices: Mapping[str, tuple[float, float]] | None = None, system_prompt: str | None = None,
                 max_tokens: int | None = None, egress_allow: Iterable[str] = ()):
        self.url = base_url.rstrip("/") + "/chat/completions"
        check_url(self.url)
        self.model = model
        self._key = api_key or None
        self._headers = check_headers({"Authorization": f"Bearer {api_key}"} if self._key else {})
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.egress_allow = allow_list(egress_allow)

    def __repr__(self) -> str:
        return f"OpenAIExecutor(url={self.url!r}, model={self.model!r})"

    def payload(self, request: StepRequest) -> dict[str, Any]:
        """The chat completion request for `request`, with the step's `agent_config` over the agent's settings."""
        overlay = request.agent_config
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": user_message(request)})
        body: dict[str, Any] = {"model": self.model_for(request), "messages": messages}
        if (wanted := response_format(request)) is not None:
            body["response_format"] = wanted
        for name in ("temperature", "reasoning_effort"):
            if overlay.get(name) is not None:
                body[name] = overlay[name]
        if max_tokens := self.max_tokens_for(request):
            body["max_completion_tokens"] = reply_cap(body, max_tokens)
        return body

    def model_for(self, request: StepRequest) -> str:
        """The model asked for: the step's `agent_config.model`, else the agent's."""
        return request.agent_config.get("model") or self.model

    def max_tokens_for(self, request: StepRequest) -> int | None:
        """The step's `agent_config.max_tokens`, never above the agent's (the run's start refused more)."""
        own = request.agent_config.get("max_tokens")
        if not own:
            return self.max_tokens
        return min(own, self.max_tokens) if self.max_tokens else own

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        """Ask the model once.

        Returns:
            The reply as stdout (and outputs when declared) with tokens and
            cost; or a failure with error_code "agent_error",
            "egress_refused", "gateway_unreachable", "timeout" or "cancelled".
        """
        body = self.payload(request)
        if body.get("max_completion_tokens", 1) < 1:
            return StepResult.failure(f"the prompt alone may use all of this agent's max_tokens "
                                      f"({self.max_tokens_for(request)}); raise max_tokens or shorten the prompt")
        reply = post_json(self.url, body, headers=self._headers, timeout_s=request.timeout_s,
                          cancel=cancel, egress_allow=self.egress_allow)
        result = reply if isinstance(reply, StepResult) else self._read(reply, request)
        if self._key and result.error and self._key in result.error:
            result.error = result.error.replace(self._key, "[api key]")
        return result

    def _read(self, reply: Reply, request: StepRequest) -> StepResult:
        # the reply is hostile input, read by the same bounds as a gateway's (depth, numbers, stored text)
        try:
            body = load_json(reply.body)
        except Malformed:
            body = None
        if not 200 <= reply.status < 300:
            return StepResult.failure(f"the model API answered HTTP {reply.status}{_error_detail(body, reply)}")
        if not isinstance(body, dict):
            return StepResult.failure("the model API's reply is not a JSON object")
        spend = self._spend(body, request)
        message = _first_message(body)
        if message is None:
            return _failed("the model API's reply has no choices[0].message", spend)
        content = message.get("content")
        if not isinstance(content, str):
            refusal = message.get("refusal")
            why = f"the model refused: {clean_text(refusal[:_ERROR_CHARS])}" if isinstance(refusal, str) and refusal \
                else "the model returned no text content"
            return _failed(why, spend)
        if problem := text_problem(content, MAX_TEXT):
            return _failed(f"the model's reply {problem}", spend)
        if not request.spec.outputs:
            return StepResult(ok=True, outputs={}, stdout=content, **spend)
        try:
            outputs = load_json(content)
        except Malformed:
            outputs = None
        if not isinstance(outputs, dict):
            return _failed("the model did not return JSON: the step declares outputs, so its reply must be "
                           f"a JSON object; it began {content[:80]!r}", spend, content)
        if problem := outputs_problem(outputs):
            return _failed(f"the model's JSON outputs {problem}", spend, content)
        return StepResult(ok=True, outputs=outputs, stdout=content, **spend)

    def _spend(self, body: dict[str, Any], request: StepRequest) -> dict[str, Any]:
        """The reply's telemetry as StepResult fields: the model that answered, the tokens and their cost.

        Usage is bookkeeping: a malformed or impossible count is taken as 0 (a model name as absent) rather than
        failing an answered step. `total_tokens` is the total when it is at least the sum of the parts (some
        APIs count more), else the sum. The price is the model asked for's (a step's `agent_config.model`
        without a price in the table: the agent's model's), never the answered name's: that is the API's own word
        (a dated snapshot, or a cheaper name that would dodge budgets).
        """
        answered = body.get("model")
        model = answered if model_problem(answered) is None else None
        usage = body.get("usage")
        if not isinstance(usage, dict):
            return {"model": model}
        prompt, completion, total = (n if type(n) is int and 0 <= n <= MAX_TOKENS else 0
                                     for n in (usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                               usage.get("total_tokens")))
        if prompt + completion > MAX_TOKENS:
            return {"model": model}
        price_in, price_out = self.prices.get(self.model_for(request)) or self.prices.get(self.model, (0.0, 0.0))
        cost = min(prompt / 1e6 * price_in + completion / 1e6 * price_out, MAX_COST)
        return {"model": model, "input_tokens": prompt, "output_tokens": completion,
                "tokens": max(total, prompt + completion), "cost": cost}


def _first_message(body: dict[str, Any]) -> dict[str, Any] | None:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _error_detail(body: Any, reply: Reply) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        text = error["message"]
    elif isinstance(error, str):
        text = error
    else:
        text = reply.body[:200].decode("utf-8", "replace")
    text = clean_text(text.strip()[:_ERROR_CHARS])
    return f": {text}" if text else ""


def _failed(message: str, spend: dict[str, Any], stdout: str = "") -> StepResult:
    return StepResult(ok=False, stdout=stdout, error=message, error_code="agent_error", **spend)
