"""Calling the API as a person (a session) or through one of their tokens, and reading its problems."""

from __future__ import annotations

import json

from rest_framework.test import APIClient

from forge.accounts.tokens import token_create
from forge.audit.models import AuditEvent

API = "/api/v1/"
PROBLEM_JSON = "application/problem+json"


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def with_token(user, *scopes: str) -> APIClient:
    _, secret = token_create(user=user, name="test", scopes=list(scopes))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def raw(client: APIClient, method: str, path: str, body: str | bytes):
    """A body sent as typed (JSON the test client would not write: NUL, a huge number, nesting)."""
    return client.generic(method, API + path, body, content_type="application/json")


def send(client: APIClient, method: str, path: str, body=None):
    if body is None:
        return getattr(client, method.lower())(API + path)
    return getattr(client, method.lower())(API + path, json.dumps(body), content_type="application/json")


def problem(response, status: int) -> dict:
    """The problem body of `response`, which must have `status`."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith(PROBLEM_JSON), response["Content-Type"]
    body = response.json()
    assert body["status"] == status and body["detail"], body
    return body


def events(code: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(code=code).order_by("id"))
