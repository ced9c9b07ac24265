"""What the tests of the API's runs and approvals share: workflows, runs in each state, and calls that read
problems (built on tests/forge/api/calls.py)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from forge.runs import services
from tests.forge.api.calls import problem as problem_body
from tests.forge.conftest import fast_forward

TOKEN = "tok-4242-hidden"

GREET = """
name: greet
args:
  who: {type: string, required: true}
  times: {type: integer, default: 1}
  api_token: {type: string, default: none-given}
steps:
  - id: hello
    agent: mock
    command: "say hello to ${args.who} with ${args.api_token}"
    outputs: {said: {type: string}}
    mock: {outputs: {said: hi}}
  - id: bye
    agent: mock
    command: bye
    depends_on: [hello]
    mock: {outputs: {said: bye}}
"""

FLAKY = """
name: flaky
steps:
  - id: fetch
    agent: mock
    command: fetch
    mock: {outputs: {rows: 3}}
  - id: load
    agent: mock
    command: load
    depends_on: [fetch]
    mock: {fail_times: 9, error: "the store answered 503"}
  - id: report
    agent: mock
    command: report
    depends_on: [load]
"""

SLOW = """
name: slow
steps:
  - {id: sign_off, approval: required}
  - {id: after, agent: mock, command: after, depends_on: [sign_off]}
"""

PRINTS = """
name: prints
args:
  api_token: {type: string}
steps:
  - {id: show, agent: shell, command: "printf 'using %s' ${args.api_token}"}
"""


def call(client: Client, method: str, url: str, body=None, **headers):
    """A JSON request to the API; `body` a value (sent as JSON) or bytes (sent as they are)."""
    data = body if isinstance(body, (bytes, str)) else (None if body is None else json.dumps(body))
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    return getattr(client, method.lower())(url, data=data, content_type="application/json", **extra)


def problem(response, status: int, slug: str | None = None) -> dict:
    """The problem body of `response`, which must have `status` (and the `type` of `slug`, when given)."""
    body = problem_body(response, status)
    if slug is not None:
        assert body["type"].endswith("/" + slug), body
    return body


def as_(client: Client, user) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def greet(save_workflow):
    return save_workflow(GREET)


@pytest.fixture
def done(greet, operator):
    """An ended run of greet, its argument that reads as a secret set."""
    return fast_forward(services.run_start(user=operator, version=greet, args={"who": "ann", "api_token": TOKEN}))


@pytest.fixture
def failed(save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(FLAKY)))
    assert run.status == "failed"
    return run


@pytest.fixture
def waiting(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(SLOW)))
