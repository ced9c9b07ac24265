"""Bodies are read strictly: unknown fields, wrong types, deep or huge bodies are 400/413 problems that name what
is wrong, and nothing changes."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group

from tests.forge.api.infra import URLS, bearer, fresh_rate_windows, post  # noqa: F401 - the fixture is used

pytestmark = [pytest.mark.django_db, URLS]
GROUPS = "/api/v1/test/groups"


@pytest.fixture
def client(operator):
    return bearer(operator)


@pytest.fixture
def unchanged():
    before = Group.objects.count()
    yield
    assert Group.objects.count() == before


def refused(response, status: int = 400) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    return response.json()


def test_a_valid_body_is_taken(client):
    answer = post(client, GROUPS, {"name": "blue", "size": 10, "tags": ["a"], "colour": {"name": "x", "shade": 0}})
    assert answer.status_code == 201 and answer.json()["name"].startswith("blue-")


def test_unknown_fields_are_named_at_any_depth(client, unchanged):
    body = refused(post(client, GROUPS, {"name": "x", "colur": 1, "colour": {"name": "y", "hue": 2}}))
    assert body["errors"] == {"colur": ["Unknown field."], "colour.hue": ["Unknown field."]}
    assert body["code"] == "invalid_fields" and body["detail"].endswith(": Unknown field. (and 1 more)")


def test_wrong_types_and_bounds_are_named_per_field(client, unchanged):
    body = refused(post(client, GROUPS, {"name": ["x"], "size": "many", "tags": "a", "colour": {"shade": 10}}))
    assert set(body["errors"]) == {"name", "size", "tags", "colour.name", "colour.shade"}
    assert body["errors"]["size"] == ["A valid integer is required."]
    assert refused(post(client, GROUPS, {"name": "x", "size": 11}))["errors"] == {
        "size": ["Ensure this value is less than or equal to 10."]}
    assert refused(post(client, GROUPS, {"name": "x", "tags": ["12345678901"]}))["errors"] == {
        "tags.0": ["Ensure this field has no more than 10 characters."]}


def test_a_missing_field_and_a_body_that_is_no_object(client, unchanged):
    assert refused(post(client, GROUPS, {}))["errors"] == {"name": ["This field is required."]}
    body = refused(post(client, GROUPS, [1, 2]))
    assert list(body["errors"]) == ["non_field_errors"] and "dictionary" in body["detail"]
    refused(post(client, GROUPS, "null"))


@pytest.mark.parametrize("text", [b'{"name": NaN}', b'{"name": Infinity}', b'{"name": "x"', b"\xff\xfe{}",
                                  b'{"name": "x"} trailing'])
def test_what_is_not_strict_json_is_refused(client, unchanged, text):
    assert refused(post(client, GROUPS, text))["code"] == "unparsable"


@pytest.mark.parametrize("text", [rb'{"name": "x", "\ud800": 1}', rb'{"name": "\udfff"}',
                                  rb'{"name": "x", "tags": ["a\ud83d"]}'])
def test_an_unpaired_surrogate_anywhere_is_refused(client, unchanged, text):
    body = refused(post(client, GROUPS, text))
    assert body["code"] == "unparsable" and "unpaired surrogate" in body["detail"]


def test_a_paired_surrogate_and_an_escaped_backslash_are_text(client):
    answer = post(client, GROUPS, rb'{"name": "\ud83d\ude00", "tags": ["\\ud800"]}')
    assert answer.status_code == 201 and answer.json()["name"].startswith("\U0001F600-")


def nested(depth: int) -> str:
    return '{"name": "deep", "tags": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_nesting_is_taken_to_32_deep_and_refused_beyond(client, unchanged):
    assert refused(post(client, GROUPS, nested(32)))["code"] == "invalid_fields"  # parsed: the serializer speaks
    body = refused(post(client, GROUPS, nested(33)))
    assert body["code"] == "too_deep" and "33" in body["detail"]
    hostile = "[" * 200_000 + "]" * 200_000  # json.loads would hit Python's recursion limit
    assert refused(post(client, GROUPS, hostile))["code"] == "too_deep"


def test_brackets_inside_strings_are_no_nesting(client):
    text = json.dumps({"name": "[[[{{{", "tags": ["[" * 40, "\\\"[[" * 20]})
    assert post(client, GROUPS, text).status_code == 400  # tags too long, but read
    assert post(client, GROUPS, json.dumps({"name": "[{" * 14})).status_code == 201


def test_a_body_past_2_mib_is_413(client, settings):
    assert settings.FORGE_API_MAX_BODY_BYTES == 2 * 1024 * 1024
    before = Group.objects.count()
    pad = " " * (2 * 1024 * 1024 - len('{"name": "ok"}'))
    assert post(client, GROUPS, '{"name": "ok"}' + pad).status_code == 201  # exactly at the limit
    body = refused(post(client, GROUPS, '{"name": "ok"}' + pad + " "), 413)
    assert body["type"].endswith("/too-large") and body["code"] == "body_too_large"
    assert Group.objects.count() == before + 1


def test_a_body_longer_than_its_content_length_says_is_read_only_to_the_limit(client, unchanged, settings):
    settings.FORGE_API_MAX_BODY_BYTES = 1024
    refused(post(client, GROUPS, '{"name": "' + "x" * 2000 + '"}'), 413)
