"""A version's graph layout, kept by the first page that computes it: validated, written once, audited, and
given to every later run view of that version. It caches ELK's positions of the steps nobody placed: where a
person put a step (StepPlacement, by step id) is what the run view and the workflow page draw."""

import json

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.workflows.models import GraphLayout, StepPlacement

pytestmark = pytest.mark.django_db
GOOD = {"prepare": {"x": 60, "y": 22}, "sign_off": {"x": 220, "y": 22}, "ship": {"x": 380.5, "y": 22}}


def post(client, run, body):
    return client.post(reverse("console:layout", args=[run.version.content_hash]),
                       body if isinstance(body, str) else json.dumps(body), content_type="application/json")


def test_the_first_layout_is_kept_audited_and_drawn_by_every_later_page(client, run, operator):
    client.force_login(operator)
    assert post(client, run, GOOD).json() == {"kept": True}
    assert post(client, run, {**GOOD, "ship": {"x": 0, "y": 0}}).json() == {"kept": False}  # the first stays
    assert GraphLayout.objects.get().positions["ship"] == {"x": 380.5, "y": 22}
    # the console keeps it, not the person whose page drew it first: nothing in olive's name
    assert list(AuditEvent.objects.filter(code="forge.layout.saved").values_list("actor", "actor_id")) == [
        ("system", None)]
    page = client.get(reverse("console:run", args=[run.pk])).content.decode()
    assert '"ship": {"x": 380.5, "y": 22.0}' in page


@pytest.mark.parametrize("body", [
    "not json", "[" * 100000, json.dumps([1, 2]), {},  # no step at all
    {**GOOD, "intruder": {"x": 1, "y": 1}}, {**GOOD, "ship": {"x": "1", "y": 2}}, {**GOOD, "ship": {"x": True, "y": 2}},
    {**GOOD, "ship": {"x": 1e308 * 10, "y": 2}}, {**GOOD, "ship": {"x": 1, "y": 2, "z": 3}}, {**GOOD, "ship": [1, 2]},
])
def test_a_bad_layout_is_a_clear_400_and_keeps_nothing(client, run, operator, body):
    client.force_login(operator)
    response = post(client, run, body)
    assert response.status_code == 400 and response.json()["error"]
    assert not GraphLayout.objects.exists()


def test_the_layout_of_the_unplaced_steps_alone_is_kept(client, run, operator):
    """The steps a person placed are not laid out, so a page sends the positions of the others only."""
    client.force_login(operator)
    assert post(client, run, {"ship": {"x": 380, "y": 22}}).json() == {"kept": True}
    assert GraphLayout.objects.get().positions == {"ship": {"x": 380.0, "y": 22.0}}


def test_the_run_view_and_the_workflow_page_draw_where_people_placed_steps(client, run, operator):
    StepPlacement.objects.create(workflow=run.version.workflow, step_id="ship", x=12.5, y=-40, placed_by=operator)
    client.force_login(operator)
    for url in (reverse("console:run", args=[run.pk]), reverse("console:workflow", args=[run.version.workflow.name])):
        page = client.get(url).content.decode()
        assert '"placements": {"ship": {"x": 12.5, "y": -40.0}}' in page, url
