"""The editor's endpoints as the page calls them: JSON in and out, the CSRF header, a person's own draft."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.workflows.editing import draft_new, draft_open
from forge.workflows.models import Draft, StepPlacement, Workflow, WorkflowVersion

# A workflow with a comment the editor must keep, an implicit edge (stdin) and an explicit one (depends_on).
SOURCE = """name: greeter
description: Says hello
steps:
  # the first step
  - id: hello
    agent: mock
    command: say hello
  - id: shout
    agent: mock
    stdin: $hello.stdout
    command: tr a-z A-Z
  - id: done
    agent: mock
    command: echo done
    depends_on: [shout]
"""


def url(name: str, draft=None, **query) -> str:
    address = reverse(f"console:{name}", kwargs={"draft_id": draft.pk} if draft is not None else {})
    return address + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


class Page:
    """A browser's session on the editor: posts JSON with the CSRF token in X-CSRFToken, as the page does."""

    def __init__(self, user):
        self.user = user
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(user)
        self.client.get(reverse("console:dashboard"))  # sets the CSRF cookie
        self.token = self.client.cookies["csrftoken"].value

    def get(self, address: str):
        return self.client.get(address)

    def post(self, address: str, body=None, *, raw: bytes | str | None = None, **headers):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(address, data, content_type="application/json", HTTP_X_CSRFTOKEN=self.token,
                                **headers)


@pytest.fixture
def page_of(db):
    return Page


@pytest.fixture
def greeter(operator, save_workflow):
    return save_workflow(SOURCE, operator).workflow


def error_of(response) -> str:
    """The refusal's code; every refusal is JSON {"error": {"code", "message"}} with a message to show."""
    body = response.json()
    assert set(body["error"]) == {"code", "message"} and body["error"]["message"], body
    return body["error"]["code"]


def world_state() -> tuple:
    """Everything an editor request may change, to check a refused one changed nothing."""
    return (list(Draft.objects.order_by("pk").values_list("pk", "text", "revision", "placements", "base_version")),
            list(WorkflowVersion.objects.order_by("pk").values_list("pk", "source")),
            list(Workflow.objects.order_by("pk").values_list("pk", "name", "description")),
            list(StepPlacement.objects.order_by("pk").values_list("step_id", "x", "y")),
            AuditEvent.objects.count())


__all__ = ["SOURCE", "Page", "draft_new", "draft_open", "error_of", "url", "world_state"]


@pytest.fixture
def draft(operator, greeter):
    return draft_open(operator, greeter)


def refused(page: Page, address: str, status: int, code: str, *, body=None, raw=None) -> None:
    """`page` posts and is refused with `status` and `code`, and nothing in the world changed."""
    before = world_state()
    response = page.post(address, body, raw=raw)
    assert (response.status_code, error_of(response)) == (status, code), response.content[:300]
    assert world_state() == before
