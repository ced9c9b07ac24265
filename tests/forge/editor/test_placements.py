"""Where a person puts steps, by step id: rows for a saved workflow, the draft for one not saved yet; each request
one audit event; only finite coordinates of the draft's own steps."""

from __future__ import annotations

import pytest

from forge.audit.models import AuditEvent
from forge.workflows.models import Draft, StepPlacement

from .conftest import SOURCE, Page, draft_new, draft_open, error_of, url, world_state

pytestmark = pytest.mark.django_db


def test_placing_steps_of_a_saved_workflow_keeps_them_for_everyone_by_step_id(operator, admin_user, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    response = page.post(url("editor_placements", draft), {"positions": {"hello": {"x": 1, "y": -2.5},
                                                                          "done": {"x": 300, "y": 40}}})
    assert response.status_code == 200 and response.json() == {"kept": 2}
    assert page.post(url("editor_placements", draft), {"positions": {"hello": {"x": 7, "y": 8}}}).json() == {
        "kept": 1}
    assert {p.step_id: (p.x, p.y, p.placed_by) for p in StepPlacement.objects.filter(workflow=greeter)} == {
        "hello": (7, 8, operator), "done": (300, 40, operator)}
    events = AuditEvent.objects.filter(code="forge.layout.placed").order_by("pk")
    assert [(e.actor, e.target, e.detail) for e in events] == [
        ("olive", "workflow:greeter", {"steps": ["done", "hello"], "count": 2}),
        ("olive", "workflow:greeter", {"steps": ["hello"], "count": 1})]
    # another editor's draft of the same workflow reads the same placements
    assert Page(admin_user).get(url("editor_draft", draft_open(admin_user, greeter))).json()["placements"] == {
        "hello": {"x": 7, "y": 8}, "done": {"x": 300, "y": 40}}


def test_placing_steps_of_a_workflow_not_saved_yet_keeps_them_in_the_draft(operator):
    page, draft = Page(operator), draft_new(operator, SOURCE.replace("greeter", "fresh"))
    assert page.post(url("editor_placements", draft), {"positions": {"shout": {"x": 3, "y": 4}}}).json() == {
        "kept": 1}
    draft.refresh_from_db()
    assert draft.placements == {"shout": {"x": 3.0, "y": 4.0}} and not StepPlacement.objects.exists()
    assert AuditEvent.objects.get(code="forge.layout.placed").target == f"draft:{draft.pk}"


@pytest.mark.parametrize("positions,code", [
    ({}, "bad_request"),
    ({"hello": {"x": 1}}, "bad_value"),
    ({"hello": {"x": 1, "y": 2, "z": 3}}, "bad_value"),
    ({"hello": {"x": "1", "y": 2}}, "bad_value"),
    ({"hello": {"x": True, "y": 2}}, "bad_value"),
    ({"hello": {"x": 1e300, "y": 2}}, "bad_value"),
    ({"hello": {"x": 10**400, "y": 2}}, "bad_value"),
    ({"hello": [1, 2]}, "bad_value"),
    ({"Hello World": {"x": 1, "y": 2}}, "bad_id"),
    ({"ghost": {"x": 1, "y": 2}}, "unknown_step"),
    ({f"s{i}": {"x": 1, "y": 2} for i in range(4)}, "bad_request"),  # more positions than the text has steps
])
def test_a_bad_position_is_refused_and_nothing_is_placed(operator, greeter, positions, code):
    """A malformed position is 400; a step the draft does not have is 422 (Invalid)."""
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = page.post(url("editor_placements", draft), {"positions": positions})
    assert (response.status_code, error_of(response)) == (422 if code == "unknown_step" else 400, code)
    assert world_state() == before


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_json_numbers_that_are_no_coordinate_are_400(operator, greeter, number):
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = page.post(url("editor_placements", draft),
                         raw='{"positions": {"hello": {"x": %s, "y": 0}}}' % number)
    assert (response.status_code, error_of(response)) == (400, "bad_value")
    assert world_state() == before


def test_a_draft_whose_text_does_not_load_places_nothing(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    Draft.objects.filter(pk=draft.pk).update(text="name: [unclosed\n")
    response = page.post(url("editor_placements", draft), {"positions": {"hello": {"x": 1, "y": 2}}})
    assert (response.status_code, error_of(response)) == (422, "not_parsed")
    assert not StepPlacement.objects.exists()


def test_past_the_bound_the_places_of_steps_the_workflow_no_longer_has_are_forgotten(operator, greeter,
                                                                                    monkeypatch):
    from forge.workflows import placements
    monkeypatch.setattr(placements, "MAX_ROWS", 3)
    for gone in ("old_one", "old_two"):  # steps of an earlier version, renamed or removed since
        StepPlacement.objects.create(workflow=greeter, step_id=gone, x=0, y=0)
    page, draft = Page(operator), draft_open(operator, greeter)
    page.post(url("editor_placements", draft), {"positions": {"hello": {"x": 1, "y": 1}, "done": {"x": 2, "y": 2}}})
    assert sorted(StepPlacement.objects.filter(workflow=greeter).values_list("step_id", flat=True)) == [
        "done", "hello"]


def test_two_placements_of_one_new_workflow_at_once_both_stay(operator):
    """Two requests of one page (two nodes dropped in quick succession) each read the draft before the other
    wrote: the later one adds its step's place, it does not put back the draft it read."""
    from forge.workflows import placements
    draft = draft_new(operator, SOURCE.replace("greeter", "fresh"))
    first, second = Draft.objects.get(pk=draft.pk), Draft.objects.get(pk=draft.pk)
    placements.placements_set(operator, first, {"hello": {"x": 1, "y": 2}})
    placements.placements_set(operator, second, {"shout": {"x": 3, "y": 4}})
    draft.refresh_from_db()
    assert draft.placements == {"hello": {"x": 1.0, "y": 2.0}, "shout": {"x": 3.0, "y": 4.0}}


def test_a_person_who_may_not_edit_places_nothing_even_through_the_service(operator, approver, greeter):
    """The service checks, not only the endpoint: what is placed is what every page of the workflow draws."""
    from django.core.exceptions import PermissionDenied

    from forge.workflows import placements
    draft = draft_open(operator, greeter)
    before = world_state()
    with pytest.raises(PermissionDenied):
        placements.placements_set(approver, draft, {"hello": {"x": 1, "y": 2}})
    with pytest.raises(PermissionDenied):
        placements.placement_copy(approver, draft, "hello", "hi")
    assert world_state() == before
