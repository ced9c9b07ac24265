"""An httpx client for the Forge API as one person: the server's address, their bearer token, timeouts, a fresh
Idempotency-Key on every write (kept across its own retries of that write), and each problem+json answer raised
as the forge.errors kind its `type` names, so the CLI prints the sentence and exits with the table's code."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from forge.errors import PROBLEM_BASE, PROBLEMS, BadRequest, ForgeError, Unavailable

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
KINDS = {problem.slug: kind for kind, problem in PROBLEMS.items()}
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
ATTEMPTS = 3  # a call tried again after a lost connection, with the same key for a write
IN_FLIGHT = "idempotency_key_in_flight"


class Client:
    def __init__(self, url: str, token: str, *, transport: httpx.BaseTransport | None = None,
                 retry_pause: float = 0.25):
        self.url = url
        self.retry_pause = retry_pause
        self.http = httpx.Client(base_url=f"{url}/api/v1", transport=transport, timeout=TIMEOUT,
                                 headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                          "User-Agent": "forge-cli"})

    def close(self) -> None:
        self.http.close()

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict | None = None) -> Any:
        return self.call("POST", path, body=body or {})

    def call(self, method: str, path: str, *, body: Any = None, params: dict | None = None) -> Any:
        """The answer's JSON (None for 204), or the problem raised as its ForgeError."""
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method in WRITES else {}
        retried = False
        for attempt in range(1, ATTEMPTS * 4 + 1):
            try:
                response = self.http.request(method, path, json=body, params=params, headers=headers)
            except httpx.TransportError as exc:
                if attempt >= ATTEMPTS:
                    raise self.unreachable(exc) from None
                retried = True
                time.sleep(self.retry_pause * attempt)
                continue
            if retried and response.status_code == 409 and _code(response) == IN_FLIGHT:
                time.sleep(self.retry_pause)  # the first try is still being answered: its answer will be kept
                continue
            return answer_of(response)
        raise Unavailable(f"the server at {self.url} kept answering that the request is still being handled")

    def unreachable(self, exc: httpx.TransportError) -> Unavailable:
        reason = str(exc) or type(exc).__name__
        return Unavailable(f"cannot reach the Forge server at {self.url}: {reason}")

    def text(self, path: str) -> str:
        """A text answer (a version's YAML)."""
        try:
            response = self.http.get(path, headers={"Accept": "text/yaml, application/problem+json"})
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            answer_of(response)
        return response.text

    def every(self, path: str, **params: Any) -> list:
        """Every item of a paged list, page after page (the cursor taken from each `next` link)."""
        items: list = []
        params = {**params, "limit": 200}
        while True:
            page = self.get(path, **params)
            items.extend(page["results"])
            if not page.get("next"):
                return items
            params["cursor"] = parse_qs(urlsplit(page["next"]).query)["cursor"][0]

    def events(self, run: int, after: int = 0, *, quiet_after: float = 15.0) -> Iterator[dict]:
        """A run's events as Server-Sent Events, from after `after` to the run's final event. After `quiet_after`
        seconds with nothing read it yields `{"event": "quiet"}` and reconnects from the last id it read, as it
        does after a lost connection."""
        last, failures = after, 0
        while True:
            try:
                with self.http.stream("GET", f"/runs/{run}/events", params={"after": last},
                                      headers={"Accept": "text/event-stream", "Last-Event-ID": str(last)},
                                      timeout=httpx.Timeout(30.0, connect=10.0, read=quiet_after)) as response:
                    if response.status_code >= 400:
                        response.read()
                        answer_of(response)
                    for event in _parse(response.iter_lines()):
                        failures = 0
                        if event.get("id"):
                            last = int(event["id"])
                        yield event
                return
            except httpx.ReadTimeout:
                yield {"event": "quiet"}
            except httpx.TransportError as exc:
                failures += 1
                if failures >= ATTEMPTS:
                    raise self.unreachable(exc) from None
                time.sleep(self.retry_pause * failures)


def _parse(lines: Iterator[str]) -> Iterator[dict]:
    event: dict[str, Any] = {}
    data: list[str] = []
    for line in lines:
        if not line:
            if data or event:
                event["data"] = json.loads("\n".join(data)) if data else None
                yield event
            event, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field in ("id", "event"):
                event[field] = value


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("code", ""))
    except ValueError:
        return ""


def answer_of(response: httpx.Response) -> Any:
    if response.status_code < 400:
        if response.status_code == 204 or not response.content:
            return None
        return response.json()
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not str(body.get("type", "")).startswith(PROBLEM_BASE):
        if response.status_code >= 500:
            return _raise(Unavailable(f"the server answered {response.status_code} {response.reason_phrase}"))
        return _raise(BadRequest(f"the server answered {response.status_code} {response.reason_phrase}"))
    kind = KINDS.get(body["type"][len(PROBLEM_BASE):], ForgeError)
    extra = {k: v for k, v in body.items() if k not in ("type", "title", "status", "detail", "code")}
    return _raise(kind(str(body.get("detail") or body.get("title") or "refused"), code=str(body.get("code") or ""),
                       **extra))


def _raise(exc: ForgeError):
    raise exc
