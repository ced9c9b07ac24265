"""Control characters in a request's path, query or form are refused before any view sees them: a path that
holds one is a 404, a query or form value a 400 that names the field; free text keeps its tabs and line
breaks; a post without its CSRF token is refused for that first; the API reads its own body."""

import pytest
from django.test import Client
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.runs.models import Run
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import run  # noqa: F401 - the fixture: a run waiting for an approval

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, operator):
    client.force_login(operator)
    return client


@pytest.mark.parametrize("path", ["/workflows/a%00b/", "/runs/1/steps/a%00b/", "/layouts/a%00b/",
                                  "/workflows/a%1Bb/", "/workflows/a%0Ab/", "/admin/forge_governance/agent/1%00/"])
def test_a_control_character_in_a_path_is_404(signed_in, run, path):
    assert signed_in.get(path).status_code == 404
    assert signed_in.post(path).status_code in (404, 405)


@pytest.mark.parametrize("query", [{"workflow": "\x00"}, {"started_by": "\x00"}, {"status": "run\x07"},
                                   {"x\x00": "1"}])
def test_a_control_character_in_a_query_is_a_400_that_names_the_parameter(signed_in, run, query):
    page = signed_in.get(reverse("console:runs"), query)
    name = next(iter(query))
    assert page.status_code == 400
    assert f"The query parameter {name.replace(chr(0), chr(0xFFFD))!r} holds a control character" in (
        page.content.decode())


@pytest.mark.parametrize("path", ["/audit/?actor=%00", "/audit/?code=%00", "/runs/?workflow=%00"])
def test_the_reported_nul_queries_are_400(signed_in, run, path):
    assert signed_in.get(path).status_code == 400


def test_a_control_character_in_an_api_query_is_a_problem_naming_the_parameter(signed_in, run):
    answer = signed_in.get("/api/v1/runs", {"workflow": "a\x00b"})
    assert answer.status_code == 400 and answer["Content-Type"] == "application/problem+json"
    body = answer.json()
    assert body["code"] == "control_character" and "'workflow' holds a control character (U+0000)" in body["detail"]
    assert signed_in.get("/api/v1/runs", {"workflow": "ab"}).status_code == 200


def test_a_control_character_in_a_form_is_a_400_and_changes_nothing(signed_in, run):
    events, status = AuditEvent.objects.count(), run.status
    page = signed_in.post(reverse("console:cancel", args=[run.pk]), {"reason": "stop\x00now"})
    assert page.status_code == 400 and "form field 'reason'" in page.content.decode()
    assert "(U+0000)" in page.content.decode()
    assert (fast_forward(run).status, AuditEvent.objects.count()) == (status, events)


def test_free_text_keeps_its_tabs_and_line_breaks(signed_in, run):
    reason = "wrong vendor:\r\n\tAcme, not Acne"
    assert signed_in.post(reverse("console:cancel", args=[run.pk]), {"reason": reason}).status_code == 302
    assert fast_forward(run).status == "cancelled"
    assert AuditEvent.objects.get(code="forge.run.cancel_requested").detail["reason"] == reason


def test_a_post_without_its_csrf_token_is_refused_for_that_first(operator, run):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    assert client.post(reverse("console:cancel", args=[run.pk]), {"reason": "\x00"}).status_code == 403


def test_the_api_reads_its_own_body_whatever_it_holds(client):
    page = client.post("/api/v1/steps/complete", "run_id=1&step=a%00b",
                       content_type="application/x-www-form-urlencoded")
    assert page.status_code == 401 and "token" in page.json()["error"]


def test_the_login_form_refuses_a_nul_before_any_lookup(client, operator):
    page = client.post(reverse("console:login"), {"username": "olive\x00", "password": "pw-olive"})
    assert page.status_code == 400 and "form field 'username'" in page.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("session_id", ['"\\000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"',
                                        '"aaaaaaaaaaaaaaaa\\033bbbbbbbbbbbbbbb"'])
def test_a_session_cookie_holding_a_control_character_is_no_session(session_id):
    """On PostgreSQL, looking the session up was a 500 on every page (on SQLite it found nothing)."""
    client = Client(HTTP_COOKIE=f"sessionid={session_id}")
    assert client.get(reverse("console:login")).status_code == 200
    page = client.get(reverse("console:runs"))
    assert page.status_code == 302 and page["Location"].startswith("/login/")
    assert page.cookies["sessionid"].value == ""  # the browser is told to forget it
