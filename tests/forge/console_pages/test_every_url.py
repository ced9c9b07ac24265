"""A walk over every URL the console routes: each needs a login, answers an outsider 403 and an unknown id
404, and refuses a form post without its CSRF token. A new route is walked without a new test."""

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from forge.console import urls
from forge.runs.artifacts import stored_name
from forge.runs.models import Approval, Artifact
from forge.schedules.services import schedule_add
from forge.workflows.editing import draft_open

pytestmark = pytest.mark.django_db
OPEN = {"login", "logout"}  # the two pages someone without a session must reach
ROUTES = [p for p in urls.urlpatterns if isinstance(p, URLPattern) and p.name not in OPEN]
UNKNOWN = {"run_id": 999999, "approval_id": 999999, "schedule_id": 999999, "step": "no_such_step",
           "name": "no_such_workflow", "content_hash": "0" * 64, "artifact_id": 999999, "draft_id": 999999}


@pytest.fixture
def known(run, operator):
    schedule = schedule_add(user=operator, workflow=run.workflow, cron="0 3 * * *")
    artifact = Artifact.objects.create(run=run, step="prepare", attempt=1, path="out.txt", size=0,
                                       sha256="0" * 64, stored=stored_name(run.pk, "0" * 64))
    return {"run_id": run.pk, "approval_id": Approval.objects.get(run=run).pk, "schedule_id": schedule.pk,
            "step": "prepare", "name": run.workflow.name, "content_hash": run.version.content_hash,
            "artifact_id": artifact.pk, "draft_id": draft_open(operator, run.workflow).pk}


def url(route: URLPattern, values: dict) -> str:
    return reverse(f"console:{route.name}", kwargs={k: values[k] for k in route.pattern.converters})


def test_the_walk_covers_the_console():
    assert {route.name for route in ROUTES} >= {"dashboard", "runs", "run", "step", "approvals", "decide", "cancel",
                                                 "restart", "audit", "workflows", "workflow", "layout"}


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
@pytest.mark.parametrize("method", ["get", "post"])
def test_someone_not_logged_in_is_sent_to_log_in(client, known, route, method):
    response = getattr(client, method)(url(route, known))
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
@pytest.mark.parametrize("method", ["get", "post"])
def test_an_outsider_gets_403_and_changes_nothing(client, known, outsider, route, method):
    client.force_login(outsider)
    before = Approval.objects.get(pk=known["approval_id"]).status
    assert getattr(client, method)(url(route, known), {"decision": "approve"}).status_code in (403, 405)
    assert Approval.objects.get(pk=known["approval_id"]).status == before
    if method == "get":
        assert client.get(url(route, known)).status_code in (403, 405)


@pytest.mark.parametrize("route", [r for r in ROUTES if r.pattern.converters], ids=lambda r: r.name)
def test_an_unknown_id_is_404(client, known, admin_user, route):
    client.force_login(admin_user)
    for name in route.pattern.converters:
        values = {**known, name: UNKNOWN[name]}
        status = {m: getattr(client, m)(url(route, values)).status_code for m in ("get", "post")}
        assert 404 in status.values() and 500 not in status.values(), (name, status)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_post_without_its_csrf_token_is_refused(known, admin_user, route):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    before = Approval.objects.get(pk=known["approval_id"]).status
    assert client.post(url(route, known), {"decision": "approve"}).status_code == 403
    assert Approval.objects.get(pk=known["approval_id"]).status == before
