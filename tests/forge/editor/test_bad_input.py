"""Bad input to every editor endpoint gets a clear JSON error, changes nothing, and is never a 500: bodies that
are not JSON, of the wrong shape or types, too large or too deep, no CSRF token, another person's draft, a person
who may not edit, a stale revision."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from forge.workflows.models import Draft

from .conftest import SOURCE, Page, error_of, refused, url, world_state

pytestmark = pytest.mark.django_db

# Each draft endpoint with a body it accepts.
GOOD = {
    "editor_text": {"text": SOURCE, "revision": 5},
    "editor_patch": {"text": SOURCE, "revision": 5, "op": {"op": "step.remove", "id": "done"}},
    "editor_placements": {"positions": {"hello": {"x": 1, "y": 2}}},
    "editor_save": {"text": SOURCE.replace("say hello", "hi"), "revision": 5, "message": "m", "base_version": 1},
    "editor_discard": {},
}
POSTS = sorted(GOOD)


NOT_JSON = ["{not json", "", "\xff\xfe", '{"text": "a", "text": }', "1e999999", "9" * 5000]


# discard takes a bare post: an empty body is its valid one
@pytest.mark.parametrize("name,raw", [(name, raw) for name in POSTS for raw in NOT_JSON
                                      if not (name == "editor_discard" and raw == "")])
def test_a_body_that_is_not_json_is_400(operator, draft, name, raw):
    refused(Page(operator), url(name, draft), 400, "bad_json" if raw != "1e999999" else "bad_request", raw=raw)


@pytest.mark.parametrize("name", POSTS)
def test_a_body_nested_deeper_than_python_reads_is_400(operator, draft, name):
    refused(Page(operator), url(name, draft), 400, "bad_json", raw="[" * 200_000 + "]" * 200_000)


# a body with no key (discard's) has none to miss
@pytest.mark.parametrize("name,shape", [(name, shape) for name in POSTS for shape in ("list", "unknown", "missing")
                                        if GOOD[name] or shape != "missing"])
def test_a_body_of_the_wrong_shape_is_400(operator, draft, name, shape):
    body = {"list": [GOOD[name]], "unknown": {**GOOD[name], "extra": 1},
            "missing": dict(list(GOOD[name].items())[1:])}[shape]
    refused(Page(operator), url(name, draft), 400, "bad_request", body=body)


@pytest.mark.parametrize("name", ["editor_text", "editor_patch", "editor_save"])
@pytest.mark.parametrize("key,value", [("text", 5), ("text", None), ("text", ["a"]), ("revision", "6"),
                                       ("revision", True), ("revision", 0), ("revision", -3), ("revision", 2**64),
                                       ("revision", 6.0)])
def test_a_value_of_the_wrong_type_or_range_is_400(operator, draft, name, key, value):
    refused(Page(operator), url(name, draft), 400, "bad_request", body={**GOOD[name], key: value})


@pytest.mark.parametrize("name", ["editor_text", "editor_patch", "editor_save"])
@pytest.mark.parametrize("text,code", [("name: a\x00b\nsteps: []\n", "bad_value"), ("name: \ud800\n", "bad_value")])
def test_text_the_database_cannot_keep_is_400(operator, draft, name, text, code):
    refused(Page(operator), url(name, draft), 400, code, body={**GOOD[name], "text": text})


@pytest.mark.parametrize("name", POSTS)
def test_a_20_mib_body_is_413_by_its_length(operator, draft, name):
    refused(Page(operator), url(name, draft), 413, "too_large",
            raw=json.dumps({"text": "x" * (20 * 1_048_576), "revision": 5}))


def test_a_20_mib_form_body_read_before_the_view_is_413_json(operator, draft):
    page = Page(operator)
    before = world_state()
    response = page.client.post(url("editor_text", draft), "text=" + "x" * (20 * 1_048_576),
                                content_type="application/x-www-form-urlencoded", HTTP_X_CSRFTOKEN=page.token)
    assert (response.status_code, error_of(response)) == (413, "too_large")
    assert world_state() == before


def test_a_20_mib_upload_is_413_json(operator, draft):
    page = Page(operator)
    before = world_state()
    response = page.client.post(url("editor_text", draft), {"text": io.BytesIO(b"x" * (20 * 1_048_576))},
                                HTTP_X_CSRFTOKEN=page.token)
    assert (response.status_code, error_of(response)) == (413, "too_large")
    assert world_state() == before


@pytest.mark.parametrize("name", ["editor_text", "editor_patch", "editor_save"])
def test_a_text_over_1_mib_in_a_body_under_2_mib_is_413(operator, draft, name):
    refused(Page(operator), url(name, draft), 413, "too_large",
            body={**GOOD[name], "text": SOURCE + "#" * 1_100_000 + "\n"})


@pytest.mark.parametrize("name", POSTS + ["editor_copy"])
def test_a_post_without_its_csrf_token_is_403_json(operator, draft, name):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    before = world_state()
    address = url(name, draft if name != "editor_copy" else None)
    response = client.post(address, json.dumps(GOOD.get(name, {"text": SOURCE, "ids": ["hello"]})),
                           content_type="application/json")
    assert (response.status_code, error_of(response)) == (403, "csrf")
    assert world_state() == before


@pytest.mark.parametrize("name", POSTS + ["editor_draft"])
def test_another_persons_draft_is_not_found(admin_user, draft, name):
    page = Page(admin_user)  # may edit, but the draft is olive's
    before = world_state()
    response = page.get(url(name, draft)) if name == "editor_draft" else page.post(url(name, draft), GOOD[name])
    assert (response.status_code, error_of(response)) == (404, "not_found")
    assert world_state() == before


@pytest.mark.parametrize("name", POSTS + ["editor_draft"])
def test_a_draft_that_does_not_exist_is_not_found(operator, draft, name):
    page = Page(operator)
    address = url(name, Draft(pk=draft.pk + 1000))
    response = page.get(address) if name == "editor_draft" else page.post(address, GOOD[name])
    assert (response.status_code, error_of(response)) == (404, "not_found")


@pytest.mark.parametrize("name", POSTS + ["editor_draft"])
def test_a_person_who_may_not_edit_is_403(approver, draft, name):
    page = Page(approver)
    before = world_state()
    response = page.get(url(name, draft)) if name == "editor_draft" else page.post(url(name, draft), GOOD[name])
    assert (response.status_code, error_of(response)) == (403, "forbidden")
    assert world_state() == before


def test_copy_is_for_editors_too(approver):
    response = Page(approver).post(url("editor_copy"), {"text": SOURCE, "ids": ["hello"]})
    assert (response.status_code, error_of(response)) == (403, "forbidden")


@pytest.mark.parametrize("name", POSTS + ["editor_draft", "editor_schema", "editor_copy"])
def test_someone_not_logged_in_is_sent_to_log_in(client, draft, name):
    address = url(name, draft if name not in ("editor_schema", "editor_copy") else None)
    before = world_state()
    for response in (client.get(address), client.post(address, "{}", content_type="application/json")):
        assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    assert world_state() == before


@pytest.mark.parametrize("name", POSTS)
def test_a_get_of_a_post_endpoint_is_405_json(operator, draft, name):
    response = Page(operator).get(url(name, draft))
    assert (response.status_code, error_of(response)) == (405, "method_not_allowed")


@pytest.mark.parametrize("name", ["editor_text", "editor_patch"])
def test_a_revision_not_newer_than_the_drafts_is_409_and_keeps_the_newer_text(operator, draft, name):
    Draft.objects.filter(pk=draft.pk).update(revision=9, text="newer")
    before = world_state()
    response = Page(operator).post(url(name, draft), {**GOOD[name], "revision": 9})
    assert (response.status_code, error_of(response)) == (409, "stale_revision")
    assert response.json()["revision"] == 9
    assert world_state() == before


@pytest.mark.parametrize("query", [{}, {"workflow": "greeter"}, {"workflow": "greeter", "a": "1", "b": "x"},
                                   {"workflow": "greeter", "a": "1", "b": "-1"},
                                   {"workflow": "greeter", "a": "1", "b": "9" * 30}])
def test_a_diff_of_versions_that_are_not_numbers_is_400(operator, greeter, query):
    response = Page(operator).get(url("editor_diff", **query))
    assert response.status_code in (400, 404) and error_of(response) in ("bad_request", "not_found")


def test_a_diff_of_a_missing_workflow_or_version_is_404(operator, greeter):
    page = Page(operator)
    for query in ({"workflow": "nope", "a": "1", "b": "1"}, {"workflow": "greeter", "a": "1", "b": "7"}):
        response = page.get(url("editor_diff", **query))
        assert (response.status_code, error_of(response)) == (404, "not_found")
