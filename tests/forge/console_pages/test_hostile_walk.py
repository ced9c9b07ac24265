"""Every console URL and form, walked as an Admin with hostile values in each query parameter, path segment,
form field and JSON body: never a 500; a control character is refused (400, or 404 in a path); a refused
value changes no row; a value that does change rows was accepted (the action's redirect).

The route table is checked against the URLconf, so a new route without a case fails here. The same walk runs
on PostgreSQL through tests/cluster/test_console_on_postgres.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from forge.console import urls
from forge.runs.artifacts import stored_name
from forge.runs.models import Approval, Artifact
from forge.runs.restart_plan import restart_plan
from forge.schedules.services import schedule_add
from forge.workflows.editing import draft_open
from tests.forge.hostile_walk import CONTROL, HOSTILE, send

pytestmark = pytest.mark.django_db

EVERY_KIND = """
name: takes_every_kind
args:
  text: {type: string, default: hello}
  whole: {type: integer, default: 3}
  amount: {type: number, default: 2.5}
  flag: {type: boolean, default: false}
  meta: {type: object, default: {}}
  items: {type: array, default: []}
steps:
  - {id: a, agent: mock, command: x}
"""
RUN_FORM = {"arg-text": "hello", "arg-whole": "3", "arg-amount": "2.5", "arg-meta": "{}", "arg-items": "[]"}


@dataclass(frozen=True)
class Case:
    """What a route reads: query parameters, and form fields (with valid values) or a JSON body, when posted."""

    query: tuple[str, ...] = ()
    form: dict | None = None  # None: the route takes no POST of its own
    json: bool = False


CASES = {
    "login": Case(query=("next",), form={"username": "adam", "password": "pw-adam", "next": "/"}),
    "logout": Case(query=("next",), form={"next": "/"}),
    "dashboard": Case(),
    "workflows": Case(),
    "workflow": Case(form=RUN_FORM),
    "schedule_toggle": Case(form={}),
    "approvals": Case(),
    "audit": Case(query=("run", "actor", "code", "since", "until", "page")),
    "runs": Case(query=("status", "workflow", "started_by", "since", "until", "sort", "tab", "page")),
    "run": Case(query=("steps",)),
    "step": Case(),
    "attempts": Case(),
    "run_log": Case(query=("level", "step", "q", "after", "limit", "format")),
    "decisions": Case(),
    "cancel": Case(form={"reason": "not needed"}),
    "restart": Case(query=("step",), form={"step": "prepare", "plan": ""}),
    "decide": Case(form={"decision": "approve", "comment": "fine", "next": "/approvals/"}),
    "reply": Case(form={"text": "go on", "place": "inbox", "next": "/approvals/"}),
    "layout": Case(json=True),
    "live_status": Case(),
    "kill_switch": Case(form={"engaged": "on", "reason": "incident 42"}),
    "spend": Case(query=("from", "to")),
    "artifact": Case(),
    "editor_schema": Case(),
    "editor_diff": Case(query=("workflow", "a", "b")),
    "editor_copy": Case(json=True),
    "editor_draft": Case(),
    "editor_text": Case(json=True),
    "editor_patch": Case(json=True),
    "editor_placements": Case(json=True),
    "editor_save": Case(json=True),
    "editor_discard": Case(json=True),
    "editor_draft_diff": Case(json=True),
    "workflow_new": Case(form={"source": "paste", "yaml": "name: pasted\nsteps: []\n", "example": "", "workflow": ""}),
    "editor_new": Case(),
    "editor": Case(),
    "workflow_versions": Case(query=("a", "b")),
    "version_restore": Case(form={"version": "1", "message": "back to the first"}),
    "tokens": Case(form={"op": "make", "name": "walked", "scopes": "runs:read", "days": "30"}),
}
MADE_IN_PLACE = {"tokens"}  # answers the page itself (201), not a redirect: a token's secret is shown once
ROUTES = {p.name: p for p in urls.urlpatterns if isinstance(p, URLPattern)}

# A layout's coordinate written as is: numbers json.loads reads but no drawing has, and what is no number.
HOSTILE_COORDINATES = {"4000-digit-integer": "9" * 4000, "5000-digit-integer": "9" * 5000, "1e999": "1e999",
                       "NaN": "NaN", "-Infinity": "-Infinity", "NUL-string": '"\\u0000"', "superscript-two": '"²"',
                       "2**64": str(2**64)}


@pytest.fixture
def known(run, save_workflow, operator, admin_user):
    every_kind = save_workflow(EVERY_KIND)
    schedule = schedule_add(user=operator, workflow=run.workflow, cron="0 3 * * *")
    artifact = Artifact.objects.create(run=run, step="prepare", attempt=1, path="out.txt", size=0, sha256="0" * 64,
                                       stored=stored_name(run.pk, "0" * 64))
    return {"run_id": run.pk, "approval_id": Approval.objects.get(run=run).pk, "schedule_id": schedule.pk,
            "step": "prepare", "name": every_kind.workflow.name, "content_hash": run.version.content_hash,
            "artifact_id": artifact.pk, "draft_id": draft_open(admin_user, every_kind.workflow).pk}


@pytest.fixture
def admin_client(admin_user):
    client = Client(raise_request_exception=False)  # a 500 is an answer the walk reports, with all the others
    client.force_login(admin_user)
    return client


def url(route_name: str, values: dict, **segments) -> str:
    """The route's URL with `values`, and each of `segments` (name: raw text) percent-encoded in its place."""
    route = ROUTES[route_name]
    marks = {k: (987654321 if route.pattern.converters[k].regex == "[0-9]+" else f"SEGMENT-{k}")
             for k in segments}
    path = reverse(f"console:{route_name}", kwargs={k: marks.get(k, values[k]) for k in route.pattern.converters})
    for k, raw in segments.items():
        path = path.replace(str(marks[k]), quote(raw, safe=""))
    return path


def form_of(name: str, known: dict) -> dict:
    form = dict(CASES[name].form)
    if name == "restart":
        form["plan"] = restart_plan(Approval.objects.get(pk=known["approval_id"]).run, "prepare").fingerprint
    return form


def test_every_route_of_the_console_has_a_case():
    assert set(CASES) == set(ROUTES)


def judge(problems: list, what: str, value_name: str, sent, *, path: bool = False, made: int = 302) -> None:
    if sent.status >= 500:
        problems.append(f"{what} = {value_name}: {sent.status}")
    elif value_name in CONTROL and sent.status not in ((404, 405) if path else (400,)):
        problems.append(f"{what} = {value_name}: {sent.status}, not refused")
    elif sent.changed and sent.status != made:
        problems.append(f"{what} = {value_name}: answered {sent.status} but changed rows")
    elif sent.refused and sent.changed:
        problems.append(f"{what} = {value_name}: refused but changed rows")


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_hostile_value_is_a_500_or_changes_anything_it_refuses(admin_client, admin_user, known, name):
    case, problems = CASES[name], []
    client = Client(raise_request_exception=False) if name == "login" else admin_client
    methods = ["get"] + (["post"] if case.form is not None or case.json else [])

    def walk(what: str, value_name: str, method: str, address: str, data=None, path: bool = False):
        judge(problems, what, value_name, send(client, method, address, data), path=path,
              made=201 if name in MADE_IN_PLACE else 302)
        if name == "logout":
            client.force_login(admin_user)  # logging out is what this page does, whatever it is sent

    for value_name, value in HOSTILE.items():
        for segment in ROUTES[name].pattern.converters:
            for method in methods:
                walk(f"{method} path {segment}", value_name, method, url(name, known, **{segment: value}), path=True)
        for param in case.query:
            walk(f"?{param}", value_name, "get", url(name, known), {param: value})
        for field in (case.form or {}):
            walk(f"form {field}", value_name, "post", url(name, known), {**form_of(name, known), field: value})
    assert not problems, "\n".join(problems)


def test_no_hostile_layout_body_is_a_500_or_kept(admin_client, known):
    problems = []
    for value_name, raw in HOSTILE_COORDINATES.items():
        body = json.dumps({"prepare": {"x": 1, "y": 1}, "sign_off": {"x": 2, "y": 2}, "ship": {"x": "@", "y": 3}})
        sent = send(admin_client, "post", url("layout", known), body.replace('"@"', raw),
                    content_type="application/json")
        if sent.status != 400 or sent.changed:
            problems.append(f"x = {value_name}: {sent.status}, changed: {sent.changed}")
    assert not problems, "\n".join(problems)
