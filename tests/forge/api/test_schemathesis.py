"""Schemathesis against a live daphne (issue 21): every operation of the document /api/v1/schema/ serves, as each
role (an Operator, an Approver and an Admin signed in, an Admin's token holding every scope, nobody), with a bounded
number of generated requests each: no answer is a 5xx, and every answer is one the document describes (its status,
its content type, its body's schema). The event stream is left out of the generated requests and checked apart: on
an ended run it answers and ends within a deadline.

Bounded for CI: EXAMPLES requests per operation and role, derandomized (the same requests every run), no shrinking.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.request

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance, response_schema_conformance, status_code_conformance)

from tests.browser.console import free_port
from tests.cluster.harness import deployed

pytestmark = pytest.mark.slow

EXAMPLES = 10  # per operation and role: ~70 operations x 5 roles
STREAM_DEADLINE_S = 30
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
CALLBACK = "/api/v1/steps/complete"  # the gateways' own: fuzzed with a gateway's token too
ROLES = ("operator", "approver", "admin", "token", "anonymous")

WORLD = """
import secrets
from django.contrib.auth.models import Group, User
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from forge.accounts.tokens import token_create
from forge.governance.models import Gateway
from forge.runs import services
from forge.runs.models import RunInput
from forge.runtime.rounds import advance
from forge.schedules.services import schedule_add
from forge.workflows.services import workflow_version_save

people = {}
for name, group in (("olive", "Operators"), ("april", "Approvers"), ("adam", "Admins"), ("root", "Admins")):
    user = User.objects.create_user(name, password="pw-" + secrets.token_hex(8))
    user.groups.add(Group.objects.get(name=group))
    people[name] = user

def session(user):
    store = SessionStore()
    store[SESSION_KEY], store[BACKEND_SESSION_KEY] = str(user.pk), "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key

def drive(run):
    for _ in range(100):
        if not RunInput.objects.filter(run=run, processed_at=None).update(due_at=run.created_at):
            break
        advance(run.pk)
    run.refresh_from_db()
    return run

ends = workflow_version_save(user=people["adam"], source=ENDS)
workflow_version_save(user=people["adam"], source=WAITS)
ended = drive(services.run_start(user=people["olive"], version=ends))
waiting = drive(services.run_start(user=people["olive"], version=ends.workflow.latest_version()))
schedule_add(user=people["olive"], workflow="matrix", cron="0 5 * * *")
token, secret = token_create(user=people["root"], name="every scope", scopes=list(SCOPES))
gateway = Gateway(name="gw")
gateway_secret = gateway.set_token()
gateway.save()
result = {"sessions": {name: session(people[name]) for name in ("olive", "april", "adam")},
          "token": secret, "token_id": token.pk, "ended": ended.pk, "status": ended.status,
          "gateway": gateway_secret}
"""
ENDS = """
name: matrix
steps:
  - {id: first, agent: mock, command: one, mock: {outputs: {n: 1}}}
  - {id: second, agent: mock, command: two, depends_on: [first]}
"""
WAITS = """
name: matrix
steps:
  - {id: sign_off, approval: required}
  - {id: after, agent: mock, command: after, depends_on: [sign_off]}
"""


class Live:
    """The daphne, its URL, and how each role signs in."""

    def __init__(self, url: str, world: dict, deployment):
        self.url = url
        self.deployment = deployment
        self.world = world
        csrf = secrets.token_hex(16)  # a CSRF secret of 32 characters, sent as the cookie and the header
        sessions = {"operator": "olive", "approver": "april", "admin": "adam"}
        self.cookies = {role: {"sessionid": world["sessions"][name], "csrftoken": csrf}
                        for role, name in sessions.items()}
        self.headers = {role: {"X-CSRFToken": csrf} for role in sessions}
        self.headers["token"] = {"Authorization": f"Bearer {world['token']}"}
        self.headers["gateway"] = {"X-Gateway-Token": world["gateway"]}


@pytest.fixture(scope="module")
def live():
    with deployed("forge-schemathesis-", "sqlite", FORGE_API_RATE_LIMIT="100000000", FORGE_SECURE_COOKIES="0") as d:
        world = d.query(f"ENDS, WAITS = {ENDS!r}, {WAITS!r}\nfrom forge.accounts.roles import SCOPES\n" + WORLD)
        assert world["status"] == "completed", world
        d.collect_static()  # error pages name hashed files
        port = free_port()
        d.start_daphne(port)
        yield Live(f"http://127.0.0.1:{port}", world, d)


@pytest.fixture(scope="module")
def served(live):
    loaded = schemathesis.openapi.from_url(live.url + "/api/v1/schema/", timeout=120)
    loaded.config.generation.update(max_examples=EXAMPLES, no_shrink=True, deterministic=True,
                                    with_security_parameters=False)
    return loaded


@pytest.fixture(scope="module")
def http():
    with requests.Session() as session:
        yield session


@pytest.mark.parametrize("role", ("operator", "token"))
def test_the_event_stream_of_an_ended_run_answers_and_ends(live, role):
    """The stream replays the ended run's events and closes: a client reading to the end finishes in time. Run
    before the generated requests: after all five roles' it once answered a JSON page (not yet understood)."""
    request = urllib.request.Request(f"{live.url}/api/v1/runs/{live.world['ended']}/events",
                                     headers={"Accept": "text/event-stream", **live.headers[role]})
    if role in live.cookies:
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in live.cookies[role].items()))
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=STREAM_DEADLINE_S) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        body = answer.read().decode()  # returns only when the server ends the stream
    assert time.monotonic() - started < STREAM_DEADLINE_S
    ids = [int(line[4:]) for line in body.splitlines() if line.startswith("id: ")]
    assert ids and ids == sorted(ids), body[:2000]
    finals = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    assert any(event.get("kind") == "run" and event.get("data", {}).get("status") == "completed"
               for event in finals), body[-2000:]
    # Asked again after the last id, an ended run has nothing more: 204, and an EventSource stops.
    request.add_header("Last-Event-ID", str(ids[-1]))
    with urllib.request.urlopen(request, timeout=STREAM_DEADLINE_S) as answer:
        assert answer.status == 204


def fuzz(operation, role: str, live: Live, http: requests.Session, examples: int = EXAMPLES) -> None:
    """`examples` generated requests (valid ones and invalid ones) to `operation` as `role`, each answer checked;
    raises at the first answer a check refuses."""
    strategy = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=strategy)
    @settings(max_examples=examples, derandomize=True, phases=[Phase.generate], deadline=None, database=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    def check(case):
        token_id = (case.path_parameters or {}).get("token_id")
        if role == "token" and token_id == live.world["token_id"]:
            case.path_parameters["token_id"] = token_id + 1  # the token revoking itself would leave nothing to test
        http.cookies.clear()
        case.call_and_validate(base_url=live.url, session=http, headers=live.headers.get(role, {}),
                               cookies=live.cookies.get(role, {}), timeout=60, checks=CHECKS)

    check()


@pytest.mark.parametrize("role", ROLES)
def test_every_answer_is_described_and_none_is_a_server_error(served, role, live, http):
    """Every operation but the event stream; each refused answer is told with its operation, all at the end."""
    refused, fuzzed = [], 0
    for result in served.get_all_operations():
        operation = result.ok()
        if operation.path.endswith("/events"):
            continue  # the stream: test_the_event_stream_of_an_ended_run_answers_and_ends
        fuzzed += 1
        try:
            fuzz(operation, role, live, http)
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - every operation is tried, each failure told
            refused.append(f"{operation.label}: {str(exc)[:3000]}")
    assert fuzzed >= 40
    assert not refused, (f"{len(refused)} of {fuzzed} operations as {role}:\n\n" + "\n\n".join(refused)
                         + "\n\nThe server's tracebacks:\n" + tracebacks(live))


def test_the_gateways_callback_answers_a_gateway_as_its_document_says(served, live, http):
    """With a gateway's token the callback reads the body: a result of no step, or a body that is none, is one of
    its documented refusals (the roles above only ever reach its 401)."""
    operation = next(result.ok() for result in served.get_all_operations() if result.ok().path == CALLBACK)
    try:
        fuzz(operation, "gateway", live, http, examples=5 * EXAMPLES)
    except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - told with the server's tracebacks
        pytest.fail(f"{str(exc)[:3000]}\n\nThe server's tracebacks:\n{tracebacks(live)}")


def tracebacks(live: Live) -> str:
    """The last tracebacks daphne logged (what a 500 was)."""
    text = "".join(path.read_text(errors="replace") for path in sorted(live.deployment.workdir.glob("daphne-*.log")))
    found = ["Traceback" + part.split("\n127.0.0.1:")[0] for part in text.split("Traceback")[1:]]
    return "\n".join(dict.fromkeys(found[-40:]))[-20000:]



def test_a_control_character_in_a_query_or_path_is_a_problem(live):
    answer = requests.get(f"{live.url}/api/v1/runs", params={"cursor": "a\x06b"}, headers=live.headers["token"],
                          timeout=60)
    assert (answer.status_code, answer.headers["Content-Type"]) == (400, "application/problem+json")
    answer = requests.get(f"{live.url}/api/v1/workflows/a%07b", headers=live.headers["token"], timeout=60)
    assert (answer.status_code, answer.headers["Content-Type"]) == (404, "application/problem+json")
