"""`by_method`: one path, one operation per method, each with its own checks; another method is a 405 problem."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client

from tests.forge.api.infra import URLS, bearer, fresh_rate_windows, post  # noqa: F401 - the fixture is used

pytestmark = [pytest.mark.django_db, URLS]
BOTH = "/api/v1/test/both"


def test_each_method_reaches_its_operation(operator):
    client = bearer(operator)
    assert set(client.get(BOTH).json()) == {"results", "next", "previous"}
    assert client.head(BOTH).status_code == 200
    made = post(client, BOTH, {"name": "blue"}, key="k")
    assert made.status_code == 201 and made.json()["name"].startswith("blue-")
    assert post(client, BOTH, {"name": "blue"}, key="k")["Idempotent-Replayed"] == "true"
    assert client.options(BOTH).status_code == 200


def test_another_method_is_a_405_problem_naming_the_allowed_ones(operator):
    answer = bearer(operator).delete(BOTH)
    assert answer.status_code == 405 and answer["Content-Type"] == "application/problem+json"
    assert answer.json()["type"].endswith("/method-not-allowed")
    assert answer["Allow"] == "GET, POST, OPTIONS, HEAD"


def test_a_session_write_needs_its_csrf_token_and_a_token_write_does_not(operator):
    session = Client(enforce_csrf_checks=True)
    session.force_login(operator)
    refused = post(session, BOTH, {"name": "blue"})
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    with_token = bearer(operator)
    with_token.handler.enforce_csrf_checks = True
    assert post(with_token, BOTH, {"name": "blue"}).status_code == 201


def test_the_schema_sees_both_operations(operator):
    client = bearer(operator)
    document = yaml.safe_load(client.get("/api/v1/schema/").content)
    both = document["paths"]["/api/v1/test/both"]
    assert both["get"]["operationId"] == "people" and both["post"]["operationId"] == "group_make"
    assert "Idempotency-Key" in [p["name"] for p in both["post"]["parameters"]]
