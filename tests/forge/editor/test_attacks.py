"""A hostile person or a hostile LLM-written patch against the editor's endpoints: whatever is sent, the answer is
a short, clear JSON refusal that changes nothing."""

from __future__ import annotations

import pytest

from forge.audit.models import AuditEvent
from forge.workflows.models import Draft

from .conftest import SOURCE, Page, error_of, url, world_state

pytestmark = pytest.mark.django_db


def test_a_patch_with_a_hundred_thousand_unknown_keys_is_refused_in_a_short_answer(operator, draft):
    op = {"op": "step.remove", "id": "hello", **{f"key_{n:06d}": 1 for n in range(100_000)}}
    before = world_state()
    response = Page(operator).post(url("editor_patch", draft), {"text": SOURCE, "revision": 5, "op": op})
    assert (response.status_code, error_of(response)) == (400, "bad_patch")
    assert "key_000000" in response.json()["error"]["message"]  # still says what was wrong
    assert len(response.content) < 2_000  # not the 900 KB of every key echoed back to the page
    assert world_state() == before


@pytest.mark.parametrize("message", ["cleared\x1b[2J the screen", "bell\x07", "a\x00b", "del\x7f"])
def test_a_save_message_with_control_characters_is_refused_as_the_restore_form_refuses_them(operator, draft,
                                                                                            message):
    before = world_state()
    response = Page(operator).post(url("editor_save", draft), {"text": SOURCE.replace("say hello", "hi"),
                                                               "revision": 5, "message": message, "base_version": 1})
    assert (response.status_code, error_of(response)) == (400, "bad_value")
    assert world_state() == before


def test_a_save_message_keeps_its_tabs_and_line_breaks(operator, draft):
    response = Page(operator).post(url("editor_save", draft), {"text": SOURCE.replace("say hello", "hi"),
                                                               "revision": 5, "message": "why:\n\t- hi\r\n",
                                                               "base_version": 1})
    assert response.status_code == 201
    assert draft.workflow.versions.get(number=2).message == "why:\n\t- hi"


def test_opening_the_editor_audits_the_draft_it_starts_once_as_discarding_it_does(operator, greeter):
    page = Page(operator)
    assert page.get(f"/workflows/{greeter.name}/edit/").status_code == 200
    assert page.get(f"/workflows/{greeter.name}/edit/").status_code == 200  # the same draft, opened again
    draft = Draft.objects.get(user=operator, workflow=greeter)
    assert page.post(url("editor_discard", draft), {}).status_code == 200
    events = AuditEvent.objects.filter(code__startswith="forge.draft.").order_by("pk")
    assert [(e.code, e.actor_id, e.target) for e in events] == [
        ("forge.draft.created", operator.pk, "workflow:greeter"),
        ("forge.draft.discarded", operator.pk, "workflow:greeter")]
