"""The revision a page sends is bounded by the draft's: a page that sent 2^63-1 would leave its draft no newer
revision to be written at, locking it until Discard. At most MAX_REVISION_AHEAD past the stored revision is
taken; beyond it the request is refused `bad_value` and changes nothing."""

from __future__ import annotations

import pytest

from forge.workflows.editing import MAX_REVISION_AHEAD, EditRefused, draft_write
from forge.workflows.models import Draft

from .conftest import SOURCE, Page, draft_open, error_of, url, world_state

pytestmark = pytest.mark.django_db

# Each endpoint that takes a revision, with a body it accepts.
BODIES = {
    "editor_text": {"text": SOURCE.replace("say hello", "say hi")},
    "editor_patch": {"text": SOURCE, "op": {"op": "step.remove", "id": "done"}},
    "editor_save": {"text": SOURCE.replace("say hello", "say hi"), "message": "m", "base_version": 1},
}


@pytest.fixture
def draft(operator, greeter):
    draft = draft_open(operator, greeter)
    Draft.objects.filter(pk=draft.pk).update(revision=40)
    draft.refresh_from_db()
    return draft


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("ahead", [MAX_REVISION_AHEAD + 1, 2**63 - 1 - 40])
def test_a_revision_too_far_past_the_drafts_is_refused_and_changes_nothing(operator, draft, name, ahead):
    before = world_state()
    response = Page(operator).post(url(name, draft), {**BODIES[name], "revision": 40 + ahead})
    assert (response.status_code, error_of(response)) == (400, "bad_value")
    assert f"{MAX_REVISION_AHEAD:,}" in response.json()["error"]["message"]
    assert world_state() == before  # no text written, no version saved


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_furthest_revision_allowed_is_taken_and_the_draft_goes_on(operator, draft, name):
    page = Page(operator)
    response = page.post(url(name, draft), {**BODIES[name], "revision": 40 + MAX_REVISION_AHEAD})
    assert response.status_code in (200, 201), response.content[:300]
    draft.refresh_from_db()
    assert draft.revision == 40 + MAX_REVISION_AHEAD
    # the draft is not locked: the next revision is written as usual
    response = page.post(url("editor_text", draft), {"text": "name: later\n", "revision": draft.revision + 1})
    assert response.status_code == 200
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == ("name: later\n", 41 + MAX_REVISION_AHEAD)


def test_after_a_refused_revision_the_page_writes_at_the_next_one(operator, draft):
    page = Page(operator)
    assert page.post(url("editor_text", draft), {"text": "name: x\n", "revision": 2**63 - 1}).status_code == 400
    response = page.post(url("editor_text", draft), {"text": "name: y\n", "revision": 41})
    assert (response.status_code, response.json()["revision"]) == (200, 41)
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == ("name: y\n", 41)


def test_the_service_refuses_it_too(operator, draft):
    with pytest.raises(EditRefused) as refused:
        draft_write(operator, draft, "name: x\n", 2**63 - 1)
    assert refused.value.code == "bad_value"
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == (SOURCE, 40)
