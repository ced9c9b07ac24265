"""A version's graph layout, kept by the first page that computes it: validated, written once, audited, and
given to every later run view of that version."""

import json

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.workflows.models import GraphLayout

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
    "not json", "[" * 100000, json.dumps([1, 2]), {"prepare": {"x": 1, "y": 1}},  # a step missing
    {**GOOD, "intruder": {"x": 1, "y": 1}}, {**GOOD, "ship": {"x": "1", "y": 2}}, {**GOOD, "ship": {"x": True, "y": 2}},
    {**GOOD, "ship": {"x": 1e308 * 10, "y": 2}}, {**GOOD, "ship": {"x": 1, "y": 2, "z": 3}}, {**GOOD, "ship": [1, 2]},
])
def test_a_bad_layout_is_a_clear_400_and_keeps_nothing(client, run, operator, body):
    client.force_login(operator)
    response = post(client, run, body)
    assert response.status_code == 400 and response.json()["error"]
    assert not GraphLayout.objects.exists()
