"""The committed OpenAPI document (docs/api/openapi.yaml) is the one the code generates, so every change to the
API shows in review; it is valid OpenAPI 3.1, generated without a warning, and served at /api/v1/schema/."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
import yaml

from forge.api.schema import openapi_document

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "docs" / "api" / "openapi.yaml"


@pytest.fixture(scope="module")
def generated():
    return openapi_document()


def test_the_committed_document_is_the_generated_one(generated):
    document, _said = generated
    committed = COMMITTED.read_bytes() if COMMITTED.is_file() else b""
    if committed != document:
        diff = "".join(difflib.unified_diff(committed.decode().splitlines(True), document.decode().splitlines(True),
                                            "committed", "generated", n=1))
        pytest.fail(f"docs/api/openapi.yaml differs from what the code generates: run bin/openapi and commit it.\n"
                    f"{diff[:6000]}")


def test_the_document_is_generated_without_warnings(generated):
    _document, said = generated
    assert not said, "\n".join(said)


def test_every_operation_says_its_problems_and_writes_take_an_idempotency_key(generated):
    document = yaml.safe_load(generated[0])
    assert document["openapi"] == "3.1.0"
    assert document["components"]["schemas"]["Problem"]["required"] == ["detail", "status", "title", "type"]
    operations = [(path, method, operation) for path, item in document["paths"].items()
                  for method, operation in item.items()]
    assert len(operations) >= 2
    for path, method, operation in operations:
        problem = operation["responses"]["401"]["content"]
        assert list(problem) == ["application/problem+json"], (path, method)
        if path == "/api/v1/steps/complete":  # the gateways' callback: a retry is known by its attempt, not a key
            assert set(operation["responses"]) == {"200", "400", "401", "403", "404", "413"}
            continue
        keyed = any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
        assert keyed == (method in ("post", "put", "patch", "delete")), (path, method)
    me = document["paths"]["/api/v1/me"]["get"]
    assert me["operationId"] == "me"
    assert me["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/MeOutput"}


@pytest.mark.django_db
@pytest.mark.urls("forge.urls")
def test_the_schema_is_served_as_yaml_and_json(client, operator, generated):
    client.force_login(operator)
    answer = client.get("/api/v1/schema/")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(answer.content)["info"]["title"] == "Forge API"
    answer = client.get("/api/v1/schema/?format=json")
    assert answer.status_code == 200 and answer.json()["openapi"] == "3.1.0"
    assert yaml.safe_load(generated[0]) == answer.json()  # the committed document's content, made once


@pytest.mark.django_db
@pytest.mark.urls("forge.urls")
def test_the_docs_page_is_served_from_static_under_the_policy(client):
    answer = client.get("/api/v1/docs/")
    assert answer.status_code == 200
    page = answer.content.decode()
    policy = answer["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)[1]
    assert f'<script nonce="{nonce}">' in page and f'<style nonce="{nonce}">' in page
    sources = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]+)"', page)  # what the page loads
    assert sources and all(source.startswith("/static/drf_spectacular_sidecar/") for source in sources), sources
    assert 'href="/login/?next=/api/v1/docs/"' in page  # how to try it out: sign in, or Authorize with a token
    assert "img-src 'self' data:" in policy and "script-src 'self' 'nonce-" in policy
    assert "unsafe" not in policy
