"""Every console page, fragment and Django admin page answers with the Content-Security-Policy, and nothing in
them needs what the policy refuses: no inline script or stylesheet without the response's nonce, no style=""
attribute, no inline event handler, no javascript: URL, nothing loaded from another origin. A new console
route or admin model is walked without a new test."""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser

import pytest
from django.contrib import admin
from django.test import Client, override_settings
from django.urls import reverse

from forge.governance.models import Agent, BudgetEnvelope
from forge.runs import services
from forge.runs.artifacts import stored_name
from forge.runs.models import Artifact, Run
from forge.schedules.services import schedule_add
from forge.workflows.editing import draft_open
from forge.workflows.services import workflow_version_save
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.test_every_url import ROUTES, url

pytestmark = pytest.mark.django_db

# A boolean argument (a checkbox on the Run form), a step that ran (its attempts and log), one waiting for a person.
SHIPS = """
name: ships
args:
  vendor: {type: string, default: Acme}
  urgent: {type: boolean, default: false}
steps:
  - {id: prepare, agent: mock, command: "prepare ${args.vendor}", mock: {outputs: {ready: true}}}
  - {id: sign_off, approval: required, approval_message: ship it?, depends_on: [prepare]}
"""
STRICT = {"default-src": ["'self'"], "connect-src": ["'self'"], "worker-src": ["'self'"], "form-action": ["'self'"],
          "object-src": ["'none'"], "base-uri": ["'none'"], "frame-ancestors": ["'none'"]}


def policy(response) -> dict[str, list[str]]:
    header = response.get("Content-Security-Policy")
    assert header, "no Content-Security-Policy header"
    return {name: values for name, *values in (part.split() for part in header.split(";"))}


def nonces(directives: dict[str, list[str]], directive: str) -> set[str]:
    return {v[len("'nonce-"):-1] for v in directives.get(directive, []) if v.startswith("'nonce-")}


class Refused(HTMLParser):
    """What in a page the policy would block or only an 'unsafe-inline' would let through."""

    def __init__(self, script_nonces: set[str], style_nonces: set[str]):
        super().__init__()
        self.script_nonces, self.style_nonces = script_nonces, style_nonces
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        text = self.get_starttag_text()
        if tag == "script":
            if "src" in attrs:
                self._same_origin(attrs["src"], text)
            elif attrs.get("type") != "application/json" and attrs.get("nonce") not in self.script_nonces:
                self.found.append(text)  # json_script's data blocks are never run, so the policy leaves them be
        if tag == "style" and attrs.get("nonce") not in self.style_nonces:
            self.found.append(text)
        if tag == "link" and "stylesheet" in (attrs.get("rel") or "").split():
            self._same_origin(attrs.get("href") or "", text)
        for name, value in attrs.items():
            if name == "style" or name.startswith("on"):
                self.found.append(text)
            elif name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith("javascript:"):
                self.found.append(text)

    def _same_origin(self, address: str, text: str) -> None:
        if not address.startswith("/") or address.startswith("//"):
            self.found.append(text)


def refused_in(response) -> list[str]:
    directives = policy(response)
    parser = Refused(nonces(directives, "script-src"), nonces(directives, "style-src"))
    body = b"".join(response.streaming_content) if response.streaming else response.content  # a download streams
    parser.feed(body.decode())
    return parser.found


def assert_strict(response) -> None:
    directives = policy(response)
    for directive, values in STRICT.items():
        assert directives.get(directive) == values, (directive, directives.get(directive))
    for directive in ("script-src", "style-src"):
        assert directives[directive][0] == "'self'", directives[directive]
        assert all(v.startswith("'nonce-") for v in directives[directive][1:]), directives[directive]
    assert not any(d.endswith(("-attr", "-elem")) for d in directives), directives  # nothing loosens them


@pytest.fixture
def known(operator, settings, tmp_path):
    version = workflow_version_save(user=None, source=SHIPS)
    run = fast_forward(services.run_start(user=operator, version=version, args={"urgent": True}))
    schedule = schedule_add(user=operator, workflow=run.workflow, cron="0 3 * * *")
    BudgetEnvelope.objects.create(name="org", limit=100)
    settings.FORGE_ARTIFACTS_DIR = tmp_path
    digest = hashlib.sha256(b"kept").hexdigest()
    artifact = Artifact.objects.create(run=run, step="prepare", attempt=1, path="out.txt", size=4, sha256=digest,
                                       stored=stored_name(run.pk, digest))
    (tmp_path / artifact.stored).parent.mkdir(parents=True)
    (tmp_path / artifact.stored).write_bytes(b"kept")
    return {"run_id": run.pk, "approval_id": run.approvals.get().pk, "schedule_id": schedule.pk,
            "step": "prepare", "name": run.workflow.name, "content_hash": run.version.content_hash,
            "artifact_id": artifact.pk}


def console_pages(known) -> list[str]:
    pages = [url(route, known) for route in ROUTES if route.name != "editor_diff"]  # which versions: its query
    return pages + [reverse("console:restart", args=[known["run_id"]]) + "?step=prepare",
                    reverse("console:editor_diff") + f"?workflow={known['name']}&a=1&b=1"]


def admin_pages(client, user) -> list[str]:
    """The admin's index, and each model's change list, add form and the change form of its first row, as far
    as `user` may see them; the kill switch's page is its change list."""
    pages = [reverse("admin:index")]
    request = client.get(reverse("admin:index")).wsgi_request
    for model, model_admin in admin.site._registry.items():
        if not model_admin.has_view_permission(request):
            continue
        opts = model._meta
        pages.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        if model_admin.has_add_permission(request):
            pages.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
        row = model._default_manager.first()
        if row is not None:
            pages.append(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk]))
    return pages


def test_every_console_page_and_fragment_has_the_policy_and_nothing_it_refuses(client, known, admin_user):
    client.force_login(admin_user)
    known["draft_id"] = draft_open(admin_user, Run.objects.get(pk=known["run_id"]).workflow).pk  # the editor's
    for page in console_pages(known):
        response = client.get(page)
        assert response.status_code in (200, 302, 405), (page, response.status_code)  # 302: restart without a step
        assert_strict(response)
        assert refused_in(response) == [], page


@pytest.mark.parametrize("superuser", [False, True], ids=["admin", "superuser"])
def test_every_admin_page_has_the_policy_and_nothing_it_refuses(client, known, operator, superuser):
    person = member("adam", "Admins")
    person.is_staff = person.is_superuser = superuser  # a superuser sees the rest: people, runs, workflows
    person.save()
    client.force_login(person)
    pages = admin_pages(client, person)
    assert {reverse("admin:forge_governance_agent_change", args=[Agent.objects.first().pk]),
            reverse("admin:forge_schedules_schedule_change", args=[known["schedule_id"]]),
            reverse("admin:forge_schedules_killswitch_changelist")} <= set(pages)
    if superuser:
        assert {reverse("admin:auth_user_change", args=[operator.pk]),
                reverse("admin:forge_runs_run_change", args=[known["run_id"]])} <= set(pages)
    for page in pages:
        response = client.get(page)
        assert response.status_code in (200, 302), (page, response.status_code)  # 302: the kill switch's one row
        assert_strict(response)
        assert refused_in(response) == [], page


def test_the_login_pages_and_a_refusal_have_the_policy(client, outsider):
    for page in (reverse("console:login"), reverse("admin:login")):
        response = client.get(page)
        assert response.status_code == 200
        assert_strict(response)
        assert refused_in(response) == [], page
    client.force_login(outsider)
    assert_strict(client.get(reverse("console:dashboard")))  # a 403


def test_the_graph_pages_bring_cytoscape_s_stylesheet_as_a_file_so_no_page_needs_a_nonce(client, known, operator):
    client.force_login(operator)
    for page in (reverse("console:run", args=[known["run_id"]]), reverse("console:workflow", args=[known["name"]])):
        response = client.get(page)
        assert re.search(r'<link rel="stylesheet" id="__________cytoscape_stylesheet" href="/static/console/graph\.'
                         r'(\w+\.)?css">', response.content.decode()), page  # Cytoscape adds no <style> of its own
        assert "'nonce-" not in response["Content-Security-Policy"], page


@override_settings(WHITENOISE_USE_FINDERS=True)  # as collectstatic's files are served; read when a client starts
def test_static_files_have_the_policy_too(known, operator):
    client = Client()
    client.force_login(operator)
    page = client.get(reverse("console:run", args=[known["run_id"]])).content.decode()
    worker = page.split('data-elk-worker="', 1)[1].split('"', 1)[0]
    response = client.get(worker)
    assert response.status_code == 200
    assert_strict(response)  # the elkjs worker runs under the policy of its own response
