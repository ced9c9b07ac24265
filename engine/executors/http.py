"""The `http` agent: a step POSTed as JSON to a gateway, which answers with its result or accepts it for later.

A 200 or 201 carries the result; a 202 means the gateway took the step and
will send the result to `callback_url`. Any other status, and a body that is
not a result object, fails the step with `agent_error`.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from typing import Any

from engine.executors.base import StepRequest, StepResult
from engine.executors.httpcall import Reply, check_headers, check_url, post_json

_BODY_SNIPPET = 200


def outputs_schema(request: StepRequest) -> dict[str, dict[str, str]]:
    """The step's declared outputs as {name: {"type": ...}}; an untyped output is {} (any value)."""
    return {name: ({"type": schema.type} if schema.type else {}) for name, schema in request.spec.outputs.items()}


class HttpExecutor:
    """POSTs each step to a gateway.

    Args:
        url: the gateway's absolute http(s) URL.
        headers: extra request headers, such as Authorization; their values never appear in a message.
        callback_url: where the gateway sends a deferred result; passed on in the body.
        connect_timeout_s: the bound on connecting; the step's timeout bounds the whole call.

    Raises:
        ValueError: a URL that is not absolute http(s), or an invalid header.
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, callback_url: str | None = None,
                 connect_timeout_s: float = 10.0):
        check_url(url)
        self.url = url
        self.headers = check_headers(headers or {})
        self.callback_url = callback_url
        self.connect_timeout_s = connect_timeout_s

    def payload(self, request: StepRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        return {
            "run_id": request.run_id, "step": request.step, "attempt": request.attempt,
            "iteration": request.iteration, "agent": request.agent, "command": request.command,
            "stdin": request.stdin, "inputs": request.inputs, "timeout_s": request.timeout_s,
            "previous_output": request.previous_output, "outputs_schema": outputs_schema(request),
            "callback_url": self.callback_url,
        }

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        """Send the step and turn the gateway's answer into a result.

        Returns:
            The gateway's result; `StepResult.accepted()` on 202; a failure with
            error_code "agent_error", "gateway_unreachable", "timeout" or "cancelled".
        """
        reply = post_json(self.url, self.payload(request), headers=self.headers, timeout_s=request.timeout_s,
                          cancel=cancel, connect_timeout_s=self.connect_timeout_s)
        if isinstance(reply, StepResult):
            return reply
        return read_reply(reply)


def read_reply(reply: Reply) -> StepResult:
    """The result a gateway's reply stands for."""
    if reply.status == 202:
        return StepResult.accepted()
    if reply.status not in (200, 201):
        snippet = reply.body[:_BODY_SNIPPET].decode("utf-8", "replace").strip()
        return StepResult.failure(f"gateway answered HTTP {reply.status}" + (f": {snippet}" if snippet else ""))
    try:
        body = json.loads(reply.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return StepResult.failure(f"the gateway's reply is not JSON: {exc}")
    if not isinstance(body, dict):
        return StepResult.failure(f"the gateway's reply must be a JSON object, got {_kind(body)}")
    problem = _check_fields(body)
    if problem:
        return StepResult.failure(f"the gateway's reply is malformed: {problem}")
    ok = body.get("ok") is not False
    outputs = body.get("outputs")
    if outputs is None and ok:
        outputs = {}
    stdout = body.get("stdout")
    if stdout is None:
        stdout = json.dumps(outputs, ensure_ascii=False) if outputs is not None else ""
    error, code = body.get("error"), body.get("error_code")
    if not ok:
        error = error or "the gateway reported a failure without a message"
        code = code or "agent_error"
    return StepResult(ok=ok, outputs=outputs, stdout=stdout, error=error, error_code=code,
                      tokens=body.get("tokens") or 0, cost=float(body.get("cost") or 0.0))


_FIELDS = {
    "ok": ("a boolean", lambda v: type(v) is bool),
    "outputs": ("an object", lambda v: isinstance(v, dict)),
    "stdout": ("a string", lambda v: type(v) is str),
    "error": ("a string", lambda v: type(v) is str),
    "error_code": ("a string", lambda v: type(v) is str),
    "tokens": ("a non-negative integer", lambda v: type(v) is int and v >= 0),
    "cost": ("a non-negative number", lambda v: type(v) in (int, float) and math.isfinite(v) and v >= 0),
}


def _check_fields(body: dict[str, Any]) -> str | None:
    # null stands for an absent field; unknown fields are ignored so gateways can add their own
    for name, (expected, check) in _FIELDS.items():
        value = body.get(name)
        if value is not None and not check(value):
            return f"{name!r} must be {expected}, got {_kind(value)}"
    return None


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    kind = names.get(type(value), type(value).__name__)
    if type(value) in (int, float):
        return f"{kind} ({value})"
    return kind
