"""Every refusal of the API is an RFC 9457 problem read from forge.errors' table, whatever raised it."""

from __future__ import annotations

import pytest
from django.test import Client

from forge.errors import PROBLEMS
from tests.forge.api.infra import URLS, bearer, fresh_rate_windows, post  # noqa: F401 - the fixture is used

pytestmark = [pytest.mark.django_db, URLS]
PROBLEM_JSON = "application/problem+json"


def problem(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM_JSON
    body = response.json()
    assert body["type"] == f"https://forge.invalid/problems/{slug}"
    assert body["status"] == status and body["title"] and body["detail"]
    return body


@pytest.mark.parametrize("kind, row", [(cls.__name__, row) for cls, row in PROBLEMS.items()])
def test_each_kind_of_refusal_answers_its_row_of_the_table(operator, kind, row):
    body = problem(bearer(operator).get(f"/api/v1/test/refuse?kind={kind}"), row.status, row.slug)
    assert body["detail"] == f"A {kind} refusal."
    assert body["code"] == "a_code" and body["extra_field"] == 1


def test_a_rate_limited_refusal_says_when_to_come_back(operator):
    response = bearer(operator).get("/api/v1/test/refuse?kind=RateLimited&retry")
    problem(response, 429, "rate-limited")
    assert response["Retry-After"] == "7"


def test_djangos_own_refusals_are_problems_too(operator):
    client = bearer(operator)
    assert problem(client.get("/api/v1/test/refuse?kind=Http404"), 404, "not-found")["detail"] == "No such thing."
    body = problem(client.get("/api/v1/test/refuse?kind=DjangoPermissionDenied"), 403, "forbidden")
    assert body["detail"] == "Not yours."


def test_an_unknown_api_path_is_a_problem_not_the_consoles_page(operator):
    for method in ("get", "post", "delete"):
        body = problem(getattr(bearer(operator), method)("/api/v1/no/such/thing"), 404, "not-found")
        assert body["code"] == "no_such_path"


@pytest.mark.urls("forge.urls")
def test_the_real_urls_end_the_api_with_the_same_404(client):
    problem(client.get("/api/v1/nothing-here"), 404, "not-found")
    problem(client.get("/api/v1/nothing-here/"), 404, "not-found")
    assert client.get("/api/v1/docs?x=1")["Location"] == "/api/v1/docs/?x=1"  # a human's missing slash
    problem(client.post("/api/v1/docs", {}), 404, "not-found")


@pytest.mark.urls("forge.urls")
def test_a_sessions_write_to_no_operation_is_the_404_problem_not_the_csrf_page(operator):
    session = Client(enforce_csrf_checks=True)
    session.force_login(operator)
    for method in ("post", "patch", "delete"):
        problem(getattr(session, method)("/api/v1/agents/abc"), 404, "not-found")
    problem(session.get("/api/v1/work%07flows"), 404, "not-found")  # a control character: no operation either


def test_no_credentials_is_401_with_a_bearer_challenge(client):
    response = client.get("/api/v1/me")
    problem(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_bad_token_says_why(client, operator):
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION="Bearer forge_pat_" + "x" * 43)
    body = problem(response, 401, "unauthenticated")
    assert body["code"] == "token_unknown" and "unknown" in body["detail"]


def test_a_wrong_method_is_405_and_says_which_are_allowed(operator):
    response = bearer(operator).put("/api/v1/me", "{}", content_type="application/json")
    assert problem(response, 405, "method-not-allowed")["detail"] == 'Method "PUT" not allowed.'
    assert "GET" in response["Allow"]


def test_a_body_that_is_not_json_is_415_or_400(operator):
    client = bearer(operator)
    problem(client.post("/api/v1/test/groups", "name=x", content_type="application/x-www-form-urlencoded"),
            415, "unsupported-media-type")
    body = problem(post(client, "/api/v1/test/groups", b"{\"name\": "), 400, "bad-request")
    assert body["code"] == "unparsable" and "not JSON" in body["detail"]


def test_an_action_the_groups_do_not_allow_is_403_and_a_missing_scope_says_which(operator, admin_user):
    body = problem(post(bearer(operator), "/api/v1/test/kill", {}), 403, "forbidden")
    assert "killswitch.set" in body["detail"]
    body = problem(post(bearer(admin_user, "runs:read"), "/api/v1/test/kill", {}), 403, "scope-missing")
    assert body["scope"] == "governance:admin"
    assert post(bearer(admin_user, "governance:admin"), "/api/v1/test/kill", {}).status_code == 200


def test_a_scope_action_needs_the_scope_only_with_a_token(operator, client):
    problem(bearer(operator, "runs:read").get("/api/v1/test/audit"), 403, "scope-missing")
    assert bearer(operator, "audit:read").get("/api/v1/test/audit").status_code == 200
    client.force_login(operator)
    assert client.get("/api/v1/test/audit").status_code == 200


def test_an_unexpected_failure_is_not_dressed_as_a_refusal(operator):
    client = bearer(operator)
    client.raise_request_exception = False
    response = post(client, "/api/v1/test/groups", {"name": "boom"})
    assert response.status_code == 500
