"""The `http` agent: a step POSTed as JSON to a gateway, which answers with its result or accepts it for later.

A 200 or 201 carries the result, read by the same rules as a callback
(`gateway_result`); a 202 means the gateway took the step and will send the
result to `callback_url`. Any other status, and a body that is not a result
object, fails the step with `agent_error`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from engine.executors.base import StepRequest, StepResult
from engine.executors.gateway_result import Malformed, clean_text, load_json, read_result
from engine.executors.egress import allow_list
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
        egress_allow: "host:port" entries that may be reached although non-public (`egress.allow_list`).

    Raises:
        ValueError: a URL that is not absolute http(s), an invalid header or allow-list entry.
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, callback_url: str | None = None,
                 connect_timeout_s: float = 10.0, egress_allow: Iterable[str] = ()):
        check_url(url)
        self.url = url
        self.headers = check_headers(headers or {})
        self.callback_url = callback_url
        self.connect_timeout_s = connect_timeout_s
        self.egress_allow = allow_list(egress_allow)

    def payload(self, request: StepRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        return {
            "run_id": request.run_id, "step": request.step, "attempt": request.attempt,
            "iteration": request.iteration, "agent": request.agent, "command": request.command,
            "stdin": request.stdin, "inputs": request.inputs, "timeout_s": request.timeout_s,
            "previous_output": request.previous_output, "outputs_schema": outputs_schema(request),
            "callback_url": self.callback_url, "agent_config": request.agent_config,
        }

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        """Send the step and turn the gateway's answer into a result.

        Returns:
            The gateway's result; `StepResult.accepted()` on 202; a failure with
            error_code "agent_error", "egress_refused", "gateway_unreachable", "timeout" or "cancelled".
        """
        reply = post_json(self.url, self.payload(request), headers=self.headers, timeout_s=request.timeout_s,
                          cancel=cancel, connect_timeout_s=self.connect_timeout_s, egress_allow=self.egress_allow)
        if isinstance(reply, StepResult):
            return reply
        return read_reply(reply, request)


def read_reply(reply: Reply, call: StepRequest | None = None) -> StepResult:
    """The result a gateway's reply to `call` stands for, read by the rules of `gateway_result`."""
    if reply.status == 202:
        return StepResult.accepted()
    if reply.status not in (200, 201):
        snippet = clean_text(reply.body[:_BODY_SNIPPET].decode("utf-8", "replace").strip())
        return StepResult.failure(f"gateway answered HTTP {reply.status}" + (f": {snippet}" if snippet else ""))
    try:
        return read_result(load_json(reply.body), call).result
    except Malformed as exc:
        return StepResult.failure(_describe(exc))


def _describe(exc: Malformed) -> str:
    whole = [text for name, text in exc.problems if name == "body"]
    if whole:
        return f"the gateway's reply {whole[0]}"
    return "the gateway's reply is malformed: " + "; ".join(f"{name!r} {text}" for name, text in exc.problems)
