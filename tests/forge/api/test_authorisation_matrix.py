"""The authorisation matrix (issue 21): every operation the URL resolver routes under /api/v1/, each HTTP method its
view handles, called by each caller, answers exactly the status the table below gives.

Who may is read from the code's own data: each view's `action` with `roles.ACTIONS` (the groups) and
`roles.ACTION_SCOPES` (a token's scope). What an allowed call answers is the one table a reviewer reads, `ANSWERS`;
an operation routed but missing from it fails `test_every_operation_has_a_row`. The world (a workflow with two
versions, a run waiting on an approval, an ended run, schedules, each governance object, drafts, tokens) is made
once for the module; each case runs in its own transaction, rolled back, so no write reaches another case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from rest_framework.test import APIClient

from forge.accounts import roles
from forge.accounts.tokens import service_account_create, token_create
from forge.api.base import ApiView
from forge.governance.models import Agent, BudgetEnvelope, Gateway, Policy
from forge.runs import services
from forge.runs.models import Approval
from forge.runs.restart_plan import restart_plan
from forge.schedules import services as schedules
from forge.workflows import editing
from forge.workflows.models import StepLibraryEntry
from forge.workflows.services import workflow_version_save
from tests.forge.api.operations import API, Operation, api_operations
from tests.forge.conftest import fast_forward, member

OPERATORS, APPROVERS, ADMINS = roles.OPERATORS, roles.APPROVERS, roles.ADMINS

WAITS = """
name: matrix
steps:
  - {id: sign_off, approval: required}
  - {id: after, agent: mock, command: after, depends_on: [sign_off]}
"""
ENDS = """
name: matrix
description: the second version
steps:
  - {id: first, agent: mock, command: one, mock: {outputs: {n: 1}}}
  - {id: second, agent: mock, command: two, depends_on: [first]}
"""
ASKS = """
name: asks
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration}"
    loop: {max_iterations: 2, gate: reply}
    mock: {sequence: [{outputs: {q: 1}}, {outputs: {q: 2}}]}
"""
NEW = "name: brand_new\nsteps:\n  - {id: a, agent: mock, command: a}\n"


# -- the operations, from the URL resolver (tests/forge/api/operations.py) ----------------------------------------

OPERATIONS = api_operations()


# -- the callers ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Caller:
    name: str
    person: str | None  # whose session or token; None: anonymous
    groups: tuple[str, ...] = ()
    scope: str | None = None  # a token holding only this scope

    def __str__(self) -> str:
        return self.name


CALLERS = [Caller("anonymous", None), Caller("no-group", "oscar"), Caller("operator", "olive", (OPERATORS,)),
           Caller("approver", "april", (APPROVERS,)), Caller("admin", "adam", (ADMINS,)),
           *[Caller(f"token[{scope}]", "adam", (ADMINS,), scope) for scope in roles.SCOPES]]


# -- what an allowed call answers ----------------------------------------------------------------------------------
# (method, route) -> (status, the body sent or None). A body from `world` is a function of it. "Empty" writes are
# those whose valid body is impractical here: the status asserted is the first one past authorisation.

def _restart(w):
    return {"step": "second", "plan": w.plan}


ANSWERS = {
    ("GET", "/api/v1/schema/"): (200, None),
    ("GET", "/api/v1/docs/"): (200, None),
    ("POST", "/api/v1/auth/token"): (201, {"username": "olive", "password": "pw-olive", "name": "matrix",
                                           "scopes": ["runs:read"]}),  # logging in: whoever calls, the body decides
    ("POST", "/api/v1/steps/complete"): (401, {}),  # a gateway's callback: only a gateway's token is let in
    ("GET", "/api/v1/me"): (200, None),
    ("GET", "/api/v1/me/tokens"): (200, None),
    ("POST", "/api/v1/me/tokens"): (201, {"name": "matrix", "scopes": ["runs:read"]}),
    ("DELETE", "/api/v1/me/tokens/<int:token_id>"): (200, None),
    ("POST", "/api/v1/service-accounts"): (201, {"username": "svc-new"}),
    ("POST", "/api/v1/service-accounts/<str:username>/tokens"): (201, {"name": "ci", "scopes": ["governance:admin"]}),
    ("GET", "/api/v1/workflows"): (200, None),
    ("POST", "/api/v1/workflows"): (201, {"yaml": NEW}),
    ("GET", "/api/v1/workflows/validate"): (404, None),  # reads a workflow named `validate`: there is none
    ("POST", "/api/v1/workflows/validate"): (200, {"yaml": NEW}),
    ("GET", "/api/v1/workflows/<str:name>"): (200, None),
    ("GET", "/api/v1/workflows/<str:name>/versions"): (200, None),
    ("GET", "/api/v1/workflows/<str:name>/versions/<int:number>"): (200, None),
    ("GET", "/api/v1/workflows/<str:name>/versions/<int:number>/yaml"): (200, None),
    ("GET", "/api/v1/workflows/<str:name>/diff"): (200, None),
    ("POST", "/api/v1/workflows/<str:name>/drafts"): (200, None),  # the caller's draft, which they have
    ("POST", "/api/v1/drafts"): (201, {"text": NEW}),
    ("GET", "/api/v1/drafts/<int:draft_id>"): (200, None),
    ("DELETE", "/api/v1/drafts/<int:draft_id>"): (204, None),
    ("PUT", "/api/v1/drafts/<int:draft_id>/text"): (200, lambda w: {"text": ENDS + "# typed\n", "revision": 50}),
    ("POST", "/api/v1/drafts/<int:draft_id>/patches"): (
        200, {"revision": 50, "op": {"op": "step.rename", "id": "second", "to": "last"}}),
    ("POST", "/api/v1/drafts/<int:draft_id>/save"): (200, {"message": "same", "base_version": 2}),  # unchanged
    ("GET", "/api/v1/runs"): (200, None),
    ("POST", "/api/v1/runs"): (201, {"workflow": "matrix"}),
    ("GET", "/api/v1/runs/<int:pk>"): (200, None),
    ("GET", "/api/v1/runs/<int:pk>/report"): (200, None),
    ("GET", "/api/v1/runs/<int:pk>/steps/<str:step>/attempts"): (200, None),
    ("GET", "/api/v1/runs/<int:pk>/steps/<str:step>/outputs"): (200, None),
    ("GET", "/api/v1/runs/<int:pk>/steps/<str:step>/log"): (200, None),
    ("POST", "/api/v1/runs/<int:pk>/cancel"): (202, {"reason": "matrix"}),
    ("GET", "/api/v1/runs/<int:pk>/restart-plan"): (200, None),
    ("POST", "/api/v1/runs/<int:pk>/restart"): (201, _restart),
    ("GET", "/api/v1/runs/<int:pk>/events"): (200, None),
    ("GET", "/api/v1/approvals"): (200, None),
    ("GET", "/api/v1/approvals/<int:pk>"): (200, None),
    ("POST", "/api/v1/approvals/<int:pk>/decision"): (202, {"decision": "approve", "comment": "ok"}),
    ("POST", "/api/v1/approvals/<int:pk>/reply"): (202, {"text": "soon"}),
    ("GET", "/api/v1/schedules"): (200, None),
    ("POST", "/api/v1/schedules"): (201, {"workflow": "matrix", "cron": "0 6 * * *"}),
    ("GET", "/api/v1/schedules/<int:pk>"): (200, None),
    ("PATCH", "/api/v1/schedules/<int:pk>"): (200, {"cron": "0 7 * * *"}),
    ("DELETE", "/api/v1/schedules/<int:pk>"): (204, None),
    ("POST", "/api/v1/schedules/<int:pk>/pause"): (200, None),
    ("POST", "/api/v1/schedules/<int:pk>/resume"): (200, None),  # the paused one
    ("GET", "/api/v1/kill-switch"): (200, None),
    ("PUT", "/api/v1/kill-switch"): (200, {"engaged": True, "reason": "matrix"}),
    ("GET", "/api/v1/audit"): (200, None),
    ("POST", "/api/v1/gateways/<int:pk>/token"): (201, None),
}
GOVERNANCE = {  # each kind: a valid new row, and a change
    "agents": {"name": "writer", "provider": "mock", "trust_level": 2},
    "gateways": {"name": "gw2", "url": "https://gateway.example.com/dispatch"},
    "budgets": {"name": "org-monthly", "scope": "org", "limit": 10},
    "policies": {"name": "low-trust", "when": "agent.trust_level < 2", "effect": "require_approval"},
    "step-library": {"name": "notify", "definition": {"agent": "mock"}},
}
for _kind, _add in GOVERNANCE.items():
    ANSWERS.update({
        ("GET", f"/api/v1/{_kind}"): (200, None), ("POST", f"/api/v1/{_kind}"): (201, _add),
        ("GET", f"/api/v1/{_kind}/<int:pk>"): (200, None), ("PATCH", f"/api/v1/{_kind}/<int:pk>"): (200, {}),
        ("DELETE", f"/api/v1/{_kind}/<int:pk>"): (204, None)})

# Operations whose `action` is a scope or nothing: the groups the service or selector then asks for (deciding is
# the approval's approvers, Approvers by default, and Admins; replying, Operators, Approvers and Admins), and the
# scopes it also needs (a token makes tokens of its own scopes only).
SERVICE_GROUPS = {
    ("POST", "/api/v1/approvals/<int:pk>/decision"): (APPROVERS, ADMINS),
    ("POST", "/api/v1/approvals/<int:pk>/reply"): (OPERATORS, APPROVERS, ADMINS),
}
SERVICE_SCOPES = {
    ("POST", "/api/v1/me/tokens"): "runs:read",  # the scope the body asks for
}
# What a token holding one scope acts with (docs/design/api.md, section 4), written out here rather than read from
# roles.SCOPE_INCLUDES: a write scope includes the reads it needs to act, so no write finds its object missing
# among what its token reads (runs:write cancels the runs it reads; approvals:decide reads the approvals it may
# decide but no run; workflows:write reads the workflows it edits; governance:admin reads the kill switch it sets).
RUN_READS = {"runs:read", "workflows:read", "approvals:read", "killswitch:read"}
HOLDS = {
    "runs:read": RUN_READS,
    "runs:write": {"runs:write", *RUN_READS},
    "approvals:decide": {"approvals:decide", "approvals:read"},
    "workflows:write": {"workflows:write", "workflows:read"},
    "governance:admin": {"governance:admin", "killswitch:read"},
    "audit:read": {"audit:read"},
}
OPEN = {("GET", "/api/v1/schema/"), ("GET", "/api/v1/docs/"), ("POST", "/api/v1/steps/complete"),
        ("POST", "/api/v1/auth/token")}


def expected(operation: Operation, caller: Caller) -> tuple[int, str | None]:
    """The status `caller` gets from `operation`, and the problem's slug when it is a refusal."""
    key = (operation.method, operation.route)
    status = ANSWERS[key][0]
    if key in OPEN:
        return status, None
    if caller.person is None:
        return 401, "unauthenticated"
    action = operation.action
    if caller.scope is not None:
        needed = {roles.ACTION_SCOPES.get(action, action), SERVICE_SCOPES.get(key)} - {None}
        if not needed <= HOLDS[caller.scope]:
            return 403, "scope-missing"
    groups = roles.ACTIONS.get(action) or SERVICE_GROUPS.get(key)
    if groups is not None and not set(caller.groups) & set(groups):
        return 403, "forbidden"
    return status, None


# -- the world -----------------------------------------------------------------------------------------------------

@dataclass
class World:
    people: dict[str, User]
    secrets: dict[str, str]  # scope -> the secret of an Admin's token holding only it
    spare_tokens: dict[str, int]  # person -> a token of theirs to revoke
    drafts: dict[str, int]  # person -> their draft of `matrix`
    waiting: int  # a run of `matrix` v1 waiting on its approval
    ended: int  # a completed run of `matrix` v2
    approval: int
    reply: int  # a loop's reply request
    schedule: int
    paused: int
    rows: dict[str, int]  # governance kind -> a row of it
    plan: str  # the ended run's restart plan from `second`


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Made once, in a transaction rolled back after the module (each case's is a savepoint inside it)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield _make_world()
        transaction.set_rollback(True)


def _make_world() -> World:
    people = {"oscar": member("oscar"), "olive": member("olive", OPERATORS), "april": member("april", APPROVERS),
              "adam": member("adam", ADMINS)}
    olive, adam = people["olive"], people["adam"]
    v1 = workflow_version_save(user=adam, source=WAITS)
    waiting = fast_forward(services.run_start(user=olive, version=v1))
    v2 = workflow_version_save(user=adam, source=ENDS)
    ended = fast_forward(services.run_start(user=olive, version=v2))
    assert ended.status == "completed", ended.status
    asks = fast_forward(services.run_start(user=olive, version=workflow_version_save(user=adam, source=ASKS)))
    schedule = schedules.schedule_add(user=olive, workflow="matrix", cron="0 5 * * *")
    paused = schedules.schedule_add(user=olive, workflow="matrix", cron="0 4 * * *", enabled=False)
    gateway = Gateway.objects.create(name="gw")
    rows = {"agents": Agent.objects.create(name="taken", provider="mock").pk, "gateways": gateway.pk,
            "budgets": BudgetEnvelope.objects.create(name="team", scope="org", limit=5).pk,
            "policies": Policy.objects.create(name="p", when="agent.trust_level < 1", effect="block").pk,
            "step-library": StepLibraryEntry.objects.create(name="lib", definition={"agent": "mock"}).pk}
    service_account_create(user=adam, username="robot")
    return World(
        people=people,
        secrets={scope: token_create(user=adam, name=scope, scopes=[scope])[1] for scope in roles.SCOPES},
        spare_tokens={name: token_create(user=user, name="spare", scopes=["runs:read"])[0].pk
                      for name, user in people.items()},
        drafts={name: editing.draft_open(people[name], v2.workflow).pk for name in ("olive", "adam")},
        waiting=waiting.pk, ended=ended.pk,
        approval=Approval.objects.get(run=waiting, status=Approval.PENDING).pk,
        reply=Approval.objects.get(run=asks, status=Approval.PENDING).pk,
        schedule=schedule.pk, paused=paused.pk, rows=rows, plan=restart_plan(ended, "second").fingerprint)


def url_of(operation: Operation, caller: Caller, w: World) -> str:
    """The operation's route with the world's objects in it (the caller's own draft and token)."""
    route, kind = operation.route, operation.route.removeprefix(API).split("/")[0]
    if "<int:draft_id>" in route:
        draft = w.drafts.get(caller.person or "", max(w.drafts.values()) + 1000)  # a draft of nobody: not theirs
        route = route.replace("<int:draft_id>", str(draft))
    values = {
        "<int:token_id>": w.spare_tokens.get(caller.person or "", 1),
        "<str:username>": "robot", "<str:name>": "matrix", "<int:number>": 2, "<str:step>": "second",
        "<int:pk>": {"runs": w.waiting if operation.route.endswith("/cancel") else w.ended,
                     "approvals": w.reply if operation.route.endswith("/reply") else w.approval,
                     "schedules": w.paused if operation.route.endswith("/resume") else w.schedule}.get(
                         kind, w.rows.get(kind))}
    for placeholder, value in values.items():
        route = route.replace(placeholder, str(value))
    assert "<" not in route, f"no value in the world for {route}"
    query = {"/diff": "?from=1&to=2", "/restart-plan": "?step=second"}
    return route + next((q for end, q in query.items() if route.endswith(end)), "")


def client_of(caller: Caller, w: World) -> APIClient:
    client = APIClient()
    if caller.scope is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {w.secrets[caller.scope]}")
    elif caller.person is not None:
        client.force_login(w.people[caller.person])
    return client


# -- the tests -----------------------------------------------------------------------------------------------------

def test_every_operation_has_a_row():
    routed = {(op.method, op.route) for op in OPERATIONS}
    assert len(routed) >= 40
    assert not routed - set(ANSWERS), f"operations with no row in ANSWERS: {sorted(routed - set(ANSWERS))}"
    assert not set(ANSWERS) - routed, f"rows of no routed operation: {sorted(set(ANSWERS) - routed)}"


def test_every_api_view_declares_an_action_it_can_check():
    for op in OPERATIONS:
        if op.view is not None and issubclass(op.view, ApiView) and op.action is not None:
            assert op.action in roles.ACTIONS or op.action in roles.SCOPES, op


@pytest.fixture(autouse=True)
def unlimited(settings):
    settings.FORGE_API_RATE_LIMIT = 10**9  # hundreds of calls a minute by the same people


@pytest.mark.parametrize("caller", CALLERS, ids=str)
@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
def test_the_caller_gets_the_status_of_the_table(operation, caller, world, db):
    status, body = ANSWERS[(operation.method, operation.route)]
    if callable(body):
        body = body(world)
    url = url_of(operation, caller, world)
    client = client_of(caller, world)
    if body is None:
        response = client.generic(operation.method, url)
    else:
        response = client.generic(operation.method, url, json.dumps(body), content_type="application/json")
    want, slug = expected(operation, caller)
    assert response.status_code == want, (str(operation), str(caller), url, response.content[:600])
    if slug is not None:
        assert response["Content-Type"].startswith("application/problem+json")
        assert response.json()["type"].endswith("/" + slug), response.json()
