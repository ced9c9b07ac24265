"""The editor's drafts and typed patches through /api/v1, for scripts: the same functions as the console's editor
endpoints, a draft only its owner's, and every bad request a problem that changes nothing."""

from __future__ import annotations

import json

import pytest

from forge.api.serializers_workflows import PATCH_FIELDS
from forge.workflows.editing import MAX_NEW_DRAFTS, draft_open
from forge.workflows.models import Draft, Workflow
from forge.workflows.services import workflow_version_save
from tests.forge.api.test_workflows_api import API, GREETER, GREETER_2, client_of, problem
from tests.forge.editor.conftest import world_state


@pytest.fixture
def greeter(operator):
    return workflow_version_save(user=operator, source=GREETER, message="first").workflow


@pytest.fixture
def draft(operator, greeter):
    return draft_open(operator, greeter)


def refused(response, status: int, slug: str) -> dict:
    return problem(response, status, slug)


def test_opening_a_workflows_draft_starts_from_its_latest_version_once(operator, greeter):
    client = client_of(operator)
    first = client.post(f"{API}/workflows/greeter/drafts")
    assert first.status_code == 201, first.content
    body = first.json()
    assert (body["workflow"], body["base_version"], body["latest_version"], body["text"]) == ("greeter", 1, 1, GREETER)
    assert body["valid"] is True and body["dirty"] is False
    assert [s["id"] for s in body["outline"]["steps"]] == ["hello"]
    again = client.post(f"{API}/workflows/greeter/drafts")
    assert (again.status_code, again.json()["id"]) == (200, body["id"])


def test_opening_a_draft_is_refused_to_an_approver_an_outsider_and_for_no_workflow(approver, outsider, operator,
                                                                                   greeter):
    refused(client_of(approver).post(f"{API}/workflows/greeter/drafts"), 403, "forbidden")
    refused(client_of(outsider).post(f"{API}/workflows/greeter/drafts"), 403, "forbidden")
    refused(client_of(operator).post(f"{API}/workflows/nobody/drafts"), 404, "not-found")
    refused(client_of(operator).get(f"{API}/workflows/greeter/drafts"), 405, "method-not-allowed")
    assert not Draft.objects.exists()


def test_a_draft_of_a_new_workflow_keeps_its_text_exactly(operator):
    text = "\ufeffname: fresh\r\nsteps: []\r\n"
    response = client_of(operator).post(f"{API}/drafts", {"text": text}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["workflow"], body["base_version"], body["text"]) == (None, None, text)
    assert Draft.objects.get(pk=body["id"]).text == text


@pytest.mark.parametrize("body, status, slug", [
    ({"text": 5}, 400, "bad-request"), ({"text": "a", "workflow": "x"}, 400, "bad-request"), ({}, 400, "bad-request"),
    ({"text": "#" * 1_100_000}, 413, "too-large"),
])
def test_a_bad_new_draft_is_a_problem(operator, body, status, slug):
    refused(client_of(operator).post(f"{API}/drafts", body, format="json"), status, slug)
    assert not Draft.objects.exists()


def test_a_draft_is_read_by_its_owner_only(operator, admin_user, approver, draft):
    body = client_of(operator).get(f"{API}/drafts/{draft.pk}").json()
    assert (body["id"], body["revision"], body["text"], body["problems"]) == (draft.pk, 0, GREETER, [])
    refused(client_of(admin_user).get(f"{API}/drafts/{draft.pk}"), 404, "not-found")  # another's: not found
    refused(client_of(approver).get(f"{API}/drafts/{draft.pk}"), 403, "forbidden")
    refused(client_of(operator).get(f"{API}/drafts/{draft.pk + 1000}"), 404, "not-found")
    refused(client_of(operator).get(f"{API}/drafts/99999999999999999999999"), 404, "not-found")
    refused(client_of(operator).post(f"{API}/drafts/{draft.pk}", {}, format="json"), 405, "method-not-allowed")


def test_typed_text_is_kept_at_a_newer_revision_with_its_problems(operator, draft):
    client = client_of(operator)
    broken = GREETER.replace("agent: mock", "agent: [mock]")
    response = client.put(f"{API}/drafts/{draft.pk}/text", {"text": broken, "revision": 1}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["revision"] == 1 and body["valid"] is False and body["dirty"] is True
    assert body["problems"][0]["step"] == "hello" and body["problems"][0]["severity"] == "error"
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == (broken, 1)
    before = world_state()
    stale = refused(client.put(f"{API}/drafts/{draft.pk}/text", {"text": GREETER, "revision": 1}, format="json"),
                    409, "stale")
    assert stale["revision"] == 1
    assert world_state() == before


@pytest.mark.parametrize("body", [
    {"text": GREETER, "revision": "2"}, {"text": GREETER, "revision": 2.0}, {"text": GREETER, "revision": True},
    {"text": GREETER, "revision": 0}, {"text": GREETER}, {"text": GREETER, "revision": 2, "op": {}},
    {"text": None, "revision": 2}, {"text": GREETER, "revision": 2**64},
])
def test_bad_text_writes_are_problems_that_change_nothing(operator, draft, body):
    before = world_state()
    refused(client_of(operator).put(f"{API}/drafts/{draft.pk}/text", body, format="json"), 400, "bad-request")
    assert world_state() == before


def test_a_typed_patch_changes_only_its_lines_and_answers_the_ranges(operator, draft):
    client = client_of(operator)
    client.put(f"{API}/drafts/{draft.pk}/text", {"text": GREETER_2, "revision": 1}, format="json")
    response = client.post(f"{API}/drafts/{draft.pk}/patches",
                           {"op": {"op": "step.rename", "id": "hello", "to": "greet"}, "revision": 2}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == GREETER_2.replace("id: hello", "id: greet").replace("$hello.", "$greet.")
    assert "# the first step" in body["text"] and body["revision"] == 2 and body["changes"]
    assert body["valid"] is True
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == (body["text"], 2)


def test_a_patch_applies_to_a_text_sent_with_it(operator, draft):
    response = client_of(operator).post(f"{API}/drafts/{draft.pk}/patches", {
        "text": GREETER_2, "revision": 1, "op": {"op": "field.set", "id": "shout", "path": ["command"],
                                                 "value": "rev"}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["text"] == GREETER_2.replace("command: tr a-z A-Z", "command: rev")


@pytest.mark.parametrize("op, code", [
    ({"op": "step.explode", "id": "hello"}, "bad_patch"),  # malformed: 400
    ({"op": "step.rename", "id": "hello"}, "bad_patch"),
    ({"op": "step.remove", "id": "hello", "colour": "red"}, "bad_patch"),
    ({"op": "step.rename", "id": "nowhere", "to": "x"}, "unknown_step"),  # well-formed, this text cannot: 422
    ({"op": "edge.add", "from": "hello", "to": "hello"}, "self_edge"),
])
def test_a_patch_that_cannot_apply_is_refused_and_changes_nothing(operator, draft, op, code):
    before = world_state()
    status, slug = (400, "bad-request") if code == "bad_patch" else (422, "invalid")
    body = refused(client_of(operator).post(f"{API}/drafts/{draft.pk}/patches", {"op": op, "revision": 1},
                                            format="json"), status, slug)
    assert body["code"] == code
    assert world_state() == before


def test_patches_refuse_bad_bodies_others_drafts_and_approvers(operator, admin_user, approver, draft):
    address = f"{API}/drafts/{draft.pk}/patches"
    rename = {"op": "step.rename", "id": "hello", "to": "greet"}
    before = world_state()
    client = client_of(operator)
    refused(client.post(address, {"op": "step.rename", "revision": 1}, format="json"), 400, "bad-request")
    refused(client.post(address, {"op": rename, "revision": 1, "extra": 1}, format="json"), 400, "bad-request")
    refused(client.post(address, {"op": rename, "revision": 0}, format="json"), 400, "bad-request")
    refused(client.post(address, {"op": rename, "revision": 1, "text": 7}, format="json"), 400, "bad-request")
    refused(client_of(admin_user).post(address, {"op": rename, "revision": 1}, format="json"), 404, "not-found")
    refused(client_of(approver).post(address, {"op": rename, "revision": 1}, format="json"), 403, "forbidden")
    refused(client.get(address), 405, "method-not-allowed")
    assert world_state() == before


def test_a_draft_is_saved_as_the_next_version(operator, draft):
    client = client_of(operator)
    client.put(f"{API}/drafts/{draft.pk}/text", {"text": GREETER_2, "revision": 1}, format="json")
    response = client.post(f"{API}/drafts/{draft.pk}/save", {"message": "shout it", "base_version": 1},
                           format="json")
    assert response.status_code == 201, response.content
    assert response.json()["created"] is True
    assert (response.json()["version"]["number"], response.json()["version"]["message"]) == (2, "shout it")
    assert Workflow.objects.get(name="greeter").latest_version().source == GREETER_2


def test_a_new_workflows_draft_is_saved_as_its_first_version(operator):
    client = client_of(operator)
    made = client.post(f"{API}/drafts", {"text": GREETER.replace("greeter", "fresh")}, format="json").json()
    response = client.post(f"{API}/drafts/{made['id']}/save", {"message": "", "base_version": None},
                           format="json")
    assert (response.status_code, response.json()["version"]["workflow"]) == (201, "fresh")


def test_a_save_on_a_stale_base_is_a_409_with_the_merge(operator, admin_user, draft):
    client = client_of(operator)
    mine = GREETER.replace("say hello", "say hi")
    client.put(f"{API}/drafts/{draft.pk}/text", {"text": mine, "revision": 1}, format="json")
    workflow_version_save(user=admin_user, source=GREETER_2, message="theirs")
    before = world_state()
    body = refused(client.post(f"{API}/drafts/{draft.pk}/save", {"message": "mine", "base_version": 1},
                               format="json"), 409, "stale")
    merge = body["merge"]
    assert (merge["theirs_version"], merge["base"], merge["theirs"], merge["mine"]) == (2, GREETER, GREETER_2, mine)
    assert merge["clean"] is True and "say hi" in merge["merged"] and "id: shout" in merge["merged"]
    assert world_state() == before


@pytest.mark.parametrize("body, status, slug", [
    ({"message": "m"}, 400, "bad-request"), ({"message": "m", "base_version": "1"}, 400, "bad-request"),
    ({"message": 1, "base_version": 1}, 400, "bad-request"), ({"message": "m" * 501, "base_version": 1}, 400,
                                                              "bad-request"),
    ({"message": "m", "base_version": 1, "text": "x"}, 400, "bad-request"),
    ({"message": "m", "base_version": 9}, 400, "bad-request"),
])
def test_a_bad_save_is_a_problem_and_saves_nothing(operator, draft, body, status, slug):
    client_of(operator).put(f"{API}/drafts/{draft.pk}/text", {"text": GREETER_2, "revision": 1}, format="json")
    before = world_state()
    refused(client_of(operator).post(f"{API}/drafts/{draft.pk}/save", body, format="json"), status, slug)
    assert world_state() == before


def test_an_invalid_draft_is_not_saved(operator, draft):
    client = client_of(operator)
    client.put(f"{API}/drafts/{draft.pk}/text", {"text": GREETER.replace("agent: mock", "agent: 5"), "revision": 1},
               format="json")
    before = world_state()
    body = refused(client.post(f"{API}/drafts/{draft.pk}/save", {"message": "", "base_version": 1}, format="json"),
                   422, "invalid")
    assert body["problems"][0]["step"] == "hello"
    assert world_state() == before


def test_a_discarded_draft_is_gone_and_anothers_cannot_be_discarded(operator, admin_user, draft):
    refused(client_of(admin_user).delete(f"{API}/drafts/{draft.pk}"), 404, "not-found")
    assert Draft.objects.filter(pk=draft.pk).exists()
    response = client_of(operator).delete(f"{API}/drafts/{draft.pk}")
    assert response.status_code == 204
    assert not Draft.objects.filter(pk=draft.pk).exists()
    refused(client_of(operator).get(f"{API}/drafts/{draft.pk}"), 404, "not-found")
    refused(client_of(operator).delete(f"{API}/drafts/{draft.pk}"), 404, "not-found")


def test_the_documented_patches_are_the_patch_engines():
    from engine.edit.patches import _KEYS

    assert {op: (set(required), set(optional)) for op, (required, optional) in PATCH_FIELDS.items()} == _KEYS


@pytest.mark.parametrize("op", [
    {"op": "step.add", "step": {"id": "bye", "agent": "mock", "command": "echo bye"}, "after": "hello"},
    {"op": "step.duplicate", "id": "hello"},
    {"op": "selection.paste", "yaml": "- id: extra\n  agent: mock\n  command: echo\n"},
    {"op": "field.set", "id": None, "path": ["description"], "value": "Says hi"},
    {"op": "field.unset", "id": "hello", "path": ["command"]},
    {"op": "selection.remove", "ids": ["shout"]},
    {"op": "edge.add", "from": "hello", "to": "shout"},
])
def test_each_kind_of_patch_applies_through_the_api(operator, draft, op):
    response = client_of(operator).post(f"{API}/drafts/{draft.pk}/patches",
                                        {"op": op, "revision": 1, "text": GREETER_2}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["text"] != GREETER_2 and "# the first step" in response.json()["text"]
    draft.refresh_from_db()
    assert draft.text == response.json()["text"]


def test_a_new_workflow_draft_past_the_limit_is_a_409_naming_the_oldest(operator):
    client = client_of(operator)
    for n in range(MAX_NEW_DRAFTS):
        assert client.post(f"{API}/drafts", {"text": f"name: n{n}\n"}, format="json").status_code == 201
    body = refused(client.post(f"{API}/drafts", {"text": "name: one_more\n"}, format="json"), 409, "conflict")
    assert body["code"] == "too_many_drafts"
    assert Draft.objects.filter(user=operator).count() == MAX_NEW_DRAFTS


def test_a_20_mib_text_is_refused_before_it_is_read(operator, draft):
    before = world_state()
    response = client_of(operator).generic("PUT", f"{API}/drafts/{draft.pk}/text",
                                           json.dumps({"text": "#" * (20 * 1_048_576), "revision": 1}),
                                           content_type="application/json")
    refused(response, 413, "too-large")
    assert world_state() == before
