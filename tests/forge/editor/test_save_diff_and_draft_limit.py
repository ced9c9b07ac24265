"""The Save dialog's diff is the server's (POST /editor/drafts/<id>/diff: the draft's text against its base version,
by the engine's anchored diff), with every bad input a clear JSON refusal; and a person keeps at most
MAX_NEW_DRAFTS drafts of workflows never saved, the next one refused with the limit and where to discard one."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from forge.workflows.editing import MAX_NEW_DRAFTS
from forge.workflows.models import Draft

from .conftest import SOURCE, Page, draft_new, draft_open, error_of, refused, url, world_state

pytestmark = pytest.mark.django_db
NEW = reverse("console:workflow_new")


# -- the diff ----------------------------------------------------------------------------------------------------


def test_the_diff_is_of_the_pages_text_against_the_drafts_base_version(operator, draft):
    before = world_state()
    response = Page(operator).post(url("editor_draft_diff", draft), {"text": SOURCE.replace("say hello", "say hi")})
    assert response.status_code == 200
    assert response.json() == {"diff": "--- v1\n+++ draft\n@@ -4,7 +4,7 @@\n"
                               "   # the first step\n   - id: hello\n     agent: mock\n"
                               "-    command: say hello\n+    command: say hi\n"
                               "   - id: shout\n     agent: mock\n     stdin: $hello.stdout\n"}
    assert world_state() == before  # a diff changes nothing, not even the draft's text


def test_the_diff_of_the_base_text_itself_is_empty(operator, draft):
    response = Page(operator).post(url("editor_draft_diff", draft), {"text": SOURCE})
    assert (response.status_code, response.json()) == (200, {"diff": ""})


def test_a_new_workflows_diff_is_against_the_blank_text(operator):
    draft = draft_new(operator, "name: fresh\n")
    response = Page(operator).post(url("editor_draft_diff", draft), {"text": "name: fresh\nsteps: []\n"})
    assert response.json() == {"diff": "--- blank\n+++ draft\n@@ -0,0 +1,2 @@\n+name: fresh\n+steps: []\n"}


def test_a_large_rewrite_is_diffed_line_by_line_and_fast(operator, save_workflow):
    # 20,000 lines with every other one changed: the browser's line table (past 4,000,000 cells) showed the
    # whole middle as removed and added; the server's diff shows only the lines that changed.
    base = SOURCE.replace("greeter", "big") + "".join(f"# note {n}\n" for n in range(20_000))
    draft = draft_open(operator, save_workflow(base, operator).workflow)
    mine = base.replace("note 1", "NOTE 1")  # note 1, note 10..19, note 100..199, ... 11,111 lines
    started = time.monotonic()
    response = Page(operator).post(url("editor_draft_diff", draft), {"text": mine})
    assert time.monotonic() - started < 10
    lines = response.json()["diff"].splitlines()
    assert sum(line.startswith("-# note 1") for line in lines) == sum(line.startswith("+# NOTE 1") for line in lines) == 11_111


@pytest.mark.parametrize("raw", ["{not json", "", "[1]", '"text"', "\xff\xfe"])
def test_a_body_that_is_not_a_json_object_is_400(operator, draft, raw):
    refused(Page(operator), url("editor_draft_diff", draft), 400, "bad_json" if raw[:1] not in "[\"" or not raw
            else "bad_request", raw=raw)


@pytest.mark.parametrize("body", [{}, {"text": SOURCE, "revision": 3}, {"txt": SOURCE}, {"text": 5},
                                  {"text": None}, {"text": ["a"]}, {"text": True}])
def test_unknown_or_missing_keys_and_wrong_types_are_400(operator, draft, body):
    refused(Page(operator), url("editor_draft_diff", draft), 400, "bad_request", body=body)


@pytest.mark.parametrize("text", ["name: a\x00b\n", "name: \ud800\n"])
def test_text_no_version_could_hold_is_400(operator, draft, text):
    refused(Page(operator), url("editor_draft_diff", draft), 400, "bad_value", body={"text": text})


def test_a_text_over_1_mib_is_413(operator, draft):
    refused(Page(operator), url("editor_draft_diff", draft), 413, "too_large",
            body={"text": SOURCE + "#" * 1_100_000 + "\n"})


def test_a_body_over_2_mib_is_413_by_its_length(operator, draft):
    refused(Page(operator), url("editor_draft_diff", draft), 413, "too_large",
            raw=json.dumps({"text": "x" * (3 * 1_048_576)}))


def test_no_csrf_token_is_403_json(operator, draft):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    response = client.post(url("editor_draft_diff", draft), json.dumps({"text": SOURCE}),
                           content_type="application/json")
    assert (response.status_code, error_of(response)) == (403, "csrf")


def test_someone_not_logged_in_is_sent_to_log_in(client, draft):
    response = client.post(url("editor_draft_diff", draft), json.dumps({"text": SOURCE}),
                           content_type="application/json")
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


def test_a_person_who_may_not_edit_is_403(approver, draft):
    refused(Page(approver), url("editor_draft_diff", draft), 403, "forbidden", body={"text": SOURCE})


def test_another_persons_draft_is_not_found_and_its_base_is_not_shown(admin_user, draft):
    page = Page(admin_user)  # may edit, but the draft is olive's
    for address in (url("editor_draft_diff", draft), url("editor_draft_diff", Draft(pk=draft.pk + 1000))):
        response = page.post(address, {"text": ""})
        assert (response.status_code, error_of(response)) == (404, "not_found")
        assert "say hello" not in response.content.decode()


def test_a_get_is_405_json(operator, draft):
    response = Page(operator).get(url("editor_draft_diff", draft))
    assert (response.status_code, error_of(response)) == (405, "method_not_allowed")


# -- the limit on drafts of new workflows -------------------------------------------------------------------------


def test_the_51st_draft_of_a_new_workflow_is_refused_with_the_limit_and_where_to_discard_one(client, operator,
                                                                                             admin_user, greeter):
    drafts = [draft_new(operator, f"name: w{n}\n") for n in range(MAX_NEW_DRAFTS - 1)]
    draft_open(operator, greeter)  # a draft of a saved workflow is not counted
    client.force_login(operator)
    response = client.post(NEW, {"source": "blank"})
    assert response.status_code == 302  # the 50th
    before = world_state()
    response = client.post(NEW, {"source": "blank"})
    assert response.status_code == 400
    said = response.content.decode()
    assert f"You have {MAX_NEW_DRAFTS} drafts of new workflows, the limit" in said
    assert "discard it (Discard draft)" in said
    assert reverse("console:editor_new", args=[drafts[0].pk]) in said  # the oldest, to open and discard
    assert world_state() == before
    assert Draft.objects.filter(user=operator, workflow__isnull=True).count() == MAX_NEW_DRAFTS

    client.force_login(admin_user)  # the limit is each person's
    assert client.post(NEW, {"source": "blank"}).status_code == 302

    Page(operator).post(url("editor_discard", drafts[0]))  # one discarded: one more may be made
    client.force_login(operator)
    assert client.post(NEW, {"source": "blank"}).status_code == 302
    assert client.post(NEW, {"source": "blank"}).status_code == 400


def test_a_draft_saved_as_a_workflow_no_longer_counts(operator):
    drafts = [draft_new(operator, f"name: w{n}\n") for n in range(MAX_NEW_DRAFTS)]
    with pytest.raises(Exception, match="the limit"):
        draft_new(operator, "name: one_too_many\n")
    page = Page(operator)
    text = "name: saved_one\nsteps:\n  - id: a\n    agent: mock\n    command: echo\n"
    response = page.post(url("editor_save", drafts[3]), {"text": text, "revision": 2, "message": "m",
                                                         "base_version": None})
    assert response.status_code == 201, response.content
    assert draft_new(operator, "name: now_room\n").workflow is None
