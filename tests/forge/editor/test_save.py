"""Saving a draft: a new immutable version only when valid and based on the latest version (audited with the
content hashes and the message); a stale base answers 409 with the three-way merge; restore; a new workflow."""

from __future__ import annotations

import pytest

from forge.audit.models import AuditEvent
from forge.errors import problem_of
from forge.workflows.editing import EditRefused, version_restore
from forge.workflows.models import Draft, StepPlacement, Workflow, content_hash

from .conftest import SOURCE, Page, draft_new, draft_open, error_of, url, world_state

pytestmark = pytest.mark.django_db


def save(page: Page, draft, text: str, base, message: str = "said why", revision: int = 1):
    return page.post(url("editor_save", draft), {"text": text, "revision": revision, "message": message,
                                                 "base_version": base})


def test_a_valid_text_becomes_the_next_version_with_its_message_and_the_draft_is_rebased(operator, greeter):
    page = Page(operator)
    draft = draft_open(operator, greeter)
    changed = SOURCE.replace("say hello", "say hello twice")
    response = save(page, draft, changed, 1, "  louder greeting ")
    assert response.status_code == 201, response.json()
    assert response.json() == {"version": 2, "workflow": "greeter", "created": True, "url": "/workflows/greeter/"}
    version = greeter.versions.get(number=2)
    assert (version.source, version.message, version.created_by) == (changed, "louder greeting", operator)
    event = AuditEvent.objects.get(code="forge.workflow.version_saved")
    assert (event.actor, event.target) == ("olive", "workflow:greeter")
    assert event.detail == {"version": 2, "before": content_hash(SOURCE), "after": content_hash(changed),
                            "message": "louder greeting"}
    draft.refresh_from_db()
    assert (draft.base_version_id, draft.text) == (version.pk, changed)
    read = page.get(url("editor_draft", draft)).json()
    assert (read["base_version"], read["latest_version"], read["dirty"]) == (2, 2, False)


def test_an_invalid_text_is_not_saved_and_its_problems_say_why(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = save(page, draft, SOURCE.replace("depends_on: [shout]", "depends_on: [nope]"), 1)
    assert response.status_code == 422 and error_of(response) == "invalid"
    problems = response.json()["problems"]
    assert [(p["code"], p["step"], p["severity"]) for p in problems] == [("unknown_dependency", "done", "error")]
    assert problems[0]["line"] == 15  # the depends_on line
    assert world_state() == before


def test_saving_the_latest_text_again_adds_no_version(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    response = save(page, draft, SOURCE, 1)
    assert response.status_code == 200 and response.json()["version"] == 1 and not response.json()["created"]
    assert greeter.versions.count() == 1 and not AuditEvent.objects.filter(code="forge.workflow.version_saved").exists()


def test_the_name_of_a_saved_workflow_stays(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = save(page, draft, SOURCE.replace("name: greeter", "name: greeter_two"), 1)
    assert response.status_code == 422 and error_of(response) == "name_changed"
    assert world_state() == before


@pytest.mark.parametrize("base", [0, 2, -1, "1", True, 1.0])
def test_a_base_version_that_is_not_one_of_the_workflow_is_refused(operator, greeter, base):
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = save(page, draft, SOURCE.replace("say hello", "hi"), base)
    assert response.status_code == 400 and error_of(response) in ("bad_base", "bad_request")
    assert world_state() == before


def test_two_people_edit_apart_and_the_second_save_gets_a_clean_merge_then_saves_it(operator, admin_user, greeter):
    olive, adam = Page(operator), Page(admin_user)
    olive_draft, adam_draft = draft_open(operator, greeter), draft_open(admin_user, greeter)
    theirs = SOURCE.replace("command: say hello", "command: say hello politely")
    assert save(olive, olive_draft, theirs, 1).status_code == 201
    mine = SOURCE.replace("command: echo done", "command: echo all done")
    before = world_state()
    response = save(adam, adam_draft, mine, 1)
    assert response.status_code == 409 and error_of(response) == "stale_base"
    merge = response.json()["merge"]
    both = theirs.replace("command: echo done", "command: echo all done")
    assert merge == {"base": SOURCE, "theirs": theirs, "mine": mine, "merged": both, "clean": True,
                     "conflicts": [], "theirs_version": 2}
    assert world_state() == before  # nothing saved, the draft still on version 1
    saved = save(adam, adam_draft, merge["merged"], merge["theirs_version"], "merged", revision=2)
    assert saved.status_code == 201 and saved.json()["version"] == 3
    assert greeter.versions.get(number=3).source == both


def test_two_people_change_the_same_line_and_the_merge_lists_the_conflict(operator, admin_user, greeter):
    olive, adam = Page(operator), Page(admin_user)
    olive_draft, adam_draft = draft_open(operator, greeter), draft_open(admin_user, greeter)
    assert save(olive, olive_draft, SOURCE.replace("say hello", "say hi"), 1).status_code == 201
    response = save(adam, adam_draft, SOURCE.replace("say hello", "say howdy"), 1)
    assert response.status_code == 409
    merge = response.json()["merge"]
    assert merge["clean"] is False and merge["theirs_version"] == 2
    [conflict] = merge["conflicts"]
    assert (conflict["theirs"], conflict["mine"]) == ("    command: say hi\n", "    command: say howdy\n")
    assert "<<<<<<< theirs" in merge["merged"]
    assert greeter.versions.count() == 2
    marked = save(adam, adam_draft, merge["merged"], merge["theirs_version"], revision=2)  # unresolved: not YAML
    assert marked.status_code == 422 and error_of(marked) == "invalid" and greeter.versions.count() == 2
    resolved = SOURCE.replace("say hello", "say howdy")  # adam keeps his line
    assert save(adam, adam_draft, resolved, merge["theirs_version"], "kept howdy", revision=3).status_code == 201
    assert [(v.number, v.source, v.message) for v in greeter.versions.order_by("number")][1:] == [
        (2, SOURCE.replace("say hello", "say hi"), "said why"), (3, resolved, "kept howdy")]


def test_a_new_workflow_is_created_at_its_first_save_with_its_placements(operator):
    page = Page(operator)
    draft = draft_new(operator, SOURCE.replace("greeter", "fresh"))
    assert page.post(url("editor_placements", draft), {"positions": {"hello": {"x": 10, "y": 20.5}}}).json() == {
        "kept": 1}
    response = save(page, draft, draft.text, None, "first")
    assert response.status_code == 201 and response.json()["version"] == 1
    workflow = Workflow.objects.get(name="fresh")
    assert AuditEvent.objects.get(code="forge.workflow.created").detail == {
        "version": 1, "before": None, "after": content_hash(draft.text), "message": "first"}
    assert [(p.step_id, p.x, p.y, p.placed_by) for p in StepPlacement.objects.filter(workflow=workflow)] == [
        ("hello", 10.0, 20.5, operator)]
    draft.refresh_from_db()
    assert (draft.workflow, draft.base_version.number, draft.placements) == (workflow, 1, {})


def test_a_new_workflow_whose_name_is_taken_is_refused_409(operator, greeter):
    page = Page(operator)
    draft = draft_new(operator, SOURCE.replace("say hello", "a copy"))
    before = world_state()
    response = save(page, draft, draft.text, None)
    assert response.status_code == 409 and error_of(response) == "name_taken"
    assert world_state() == before


def test_restoring_an_old_version_makes_its_text_the_newest_audited(operator, greeter, save_workflow):
    changed = SOURCE.replace("say hello", "say bye")
    save_workflow(changed, operator)
    version = version_restore(operator, greeter, 1, "back to hello")
    assert (version.number, version.source, version.message) == (3, SOURCE, "back to hello")
    event = AuditEvent.objects.filter(code="forge.workflow.version_saved").latest("pk")
    assert event.detail == {"version": 3, "before": content_hash(changed), "after": content_hash(SOURCE),
                            "message": "back to hello"}
    with pytest.raises(EditRefused) as latest:
        version_restore(operator, greeter, 3)
    assert latest.value.code == "unchanged"
    with pytest.raises(EditRefused) as again:  # v1 restored twice: v3 holds its text, no v4 of the same text
        version_restore(operator, greeter, 1)
    assert again.value.code == "unchanged" and "v3" in again.value.message
    assert greeter.versions.count() == 3
    with pytest.raises(EditRefused) as missing:
        version_restore(operator, greeter, 9)
    assert problem_of(missing.value)[0] == 404 and problem_of(latest.value)[0] == 409


def test_restoring_needs_workflow_edit(approver, greeter, save_workflow, operator):
    save_workflow(SOURCE.replace("say hello", "say bye"), operator)
    from django.core.exceptions import PermissionDenied
    with pytest.raises(PermissionDenied):
        version_restore(approver, greeter, 1)
    assert greeter.versions.count() == 2


def test_discarding_forgets_the_draft_audited_and_says_where_to_go(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    response = page.post(url("editor_discard", draft))
    assert response.status_code == 200 and response.json() == {"url": "/workflows/greeter/"}
    assert not Draft.objects.filter(pk=draft.pk).exists()
    event = AuditEvent.objects.get(code="forge.draft.discarded")
    assert (event.actor, event.target, event.detail) == ("olive", "workflow:greeter",
                                                         {"draft": draft.pk, "base_version": 1})
    assert greeter.versions.count() == 1


@pytest.mark.parametrize("message,code", [("x" * 501, "bad_value"), ("a\x00b", "bad_value"), (5, "bad_request")])
def test_a_message_that_cannot_be_kept_is_refused_and_nothing_is_saved(operator, greeter, message, code):
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = save(page, draft, SOURCE.replace("say hello", "hi"), 1, message)
    assert response.status_code == 400 and error_of(response) == code
    assert world_state() == before
    with pytest.raises(EditRefused):
        version_restore(operator, greeter, 1, message)
    assert world_state() == before


def test_a_version_todays_library_refuses_is_not_restored(operator, save_workflow):
    from forge.workflows.models import StepLibraryEntry
    entry = StepLibraryEntry.objects.create(name="greet", definition={"agent": "mock", "command": "hi"})
    StepLibraryEntry.objects.create(name="other", definition={"agent": "mock", "command": "x"})
    first = save_workflow(SOURCE.replace("    agent: mock\n    command: say hello\n", "    library_step: greet\n"),
                          operator)
    save_workflow(SOURCE, operator)
    entry.delete()
    before = world_state()
    with pytest.raises(EditRefused) as refused:
        version_restore(operator, first.workflow, 1)
    assert refused.value.code == "invalid"
    assert "unknown_reference" in [p["code"] for p in refused.value.extra["problems"]]
    assert world_state() == before
