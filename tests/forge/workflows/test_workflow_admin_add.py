"""Django admin's *Add workflow* makes a workflow with its first version from the YAML pasted in, through the
workflows service (validated by the engine, audited), or nothing at all with every problem on the form."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.workflows.models import Workflow, WorkflowVersion

pytestmark = pytest.mark.django_db
ADD = reverse("admin:forge_workflows_workflow_add")
GOOD = """name: pasted
description: pasted in the admin
steps:
  - {id: fetch, agent: mock, command: fetch}
  - {id: load, agent: mock, command: load, depends_on: [fetch]}
"""
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))


@pytest.fixture
def boss(client):
    boss = User.objects.create_superuser("boss", password="pw-boss-1234")
    client.force_login(boss)
    return boss


@pytest.fixture
def before(db):
    """What the installation holds before (its example workflows)."""
    return Workflow.objects.count(), WorkflowVersion.objects.count(), AuditEvent.objects.count()


def made(before) -> tuple[int, int, int]:
    return tuple(now - then for now, then in zip(
        (Workflow.objects.count(), WorkflowVersion.objects.count(), AuditEvent.objects.count()), before))


def test_pasted_yaml_makes_the_workflow_and_its_first_version_audited_and_the_console_opens_it(client, boss,
                                                                                                before):
    page = client.get(ADD)
    assert page.status_code == 200 and 'name="source"' in page.content.decode()
    added = client.post(ADD, {"source": GOOD})
    assert added.status_code == 302, added.content.decode()[:3000]
    assert made(before) == (1, 1, 1)
    workflow = Workflow.objects.get(name="pasted")
    assert (workflow.name, workflow.description) == ("pasted", "pasted in the admin")
    assert [(v.number, v.source, v.created_by) for v in workflow.versions.all()] == [(1, GOOD, boss)]
    event = AuditEvent.objects.get(code="forge.workflow.created")
    assert (event.actor, event.target, event.detail) == ("boss", "workflow:pasted", {
        "version": 1, "before": None, "after": workflow.versions.get().content_hash, "message": ""})
    listed = client.get(reverse("console:workflows")).content.decode()
    assert ">pasted<" in listed and "v-" not in listed
    assert client.get(reverse("console:workflow", args=["pasted"])).status_code == 200


@pytest.mark.parametrize("source, says", [
    ("name: broken\nsteps:\n  - {id: a, agent: mock, command: a, depends_on: [nowhere]}\n", "line 3"),
    ("name: [unclosed\n", "line "),
    ("- just\n- a list\n", "mapping"),
    ("just a sentence", "mapping"),
    ("", "This field is required."),
    (BOMB, "alias"),
    ("name: big\ndescription: " + "x" * 1_100_000 + "\nsteps: []\n", "at most"),
])
def test_a_document_that_is_no_workflow_is_said_on_the_form_and_makes_nothing(client, boss, before, source, says):
    page = client.post(ADD, {"source": source})
    html = page.content.decode()
    assert page.status_code == 200 and "errornote" in html and says in html, html[html.find("errorlist"):][:800]
    assert made(before) == (0, 0, 0)


def test_every_problem_shows_with_its_line(client, boss, before):
    source = "name: two_problems\nsteps:\n  - {id: a, agent: mock, command: a, depends_on: [b]}\n" \
             "  - {id: b, agent: mock, command: b, depends_on: [a]}\n  - {id: c, agent: mock}\n"
    html = client.post(ADD, {"source": source}).content.decode()
    assert html.count("<li>line ") >= 2 and made(before) == (0, 0, 0)


def test_a_workflow_that_exists_is_not_added_again(client, boss, before):
    assert client.post(ADD, {"source": GOOD}).status_code == 302
    page = client.post(ADD, {"source": GOOD.replace("load]", "load] ")})
    assert page.status_code == 200 and "a workflow named &#x27;pasted&#x27; exists already" in page.content.decode()
    assert made(before)[:2] == (1, 1)


def test_a_workflow_s_page_in_admin_changes_nothing(client, boss):
    client.post(ADD, {"source": GOOD})
    workflow = Workflow.objects.get(name="pasted")
    url = reverse("admin:forge_workflows_workflow_change", args=[workflow.pk])
    assert client.get(url).status_code == 200
    client.post(url, {"name": "renamed", "description": "x"})
    assert Workflow.objects.get(pk=workflow.pk).name == "pasted"


def test_a_workflow_left_without_a_version_by_the_old_add_page_says_so_and_opens(client, operator):
    Workflow.objects.create(name="bare")
    client.force_login(operator)
    row = client.get(reverse("console:workflows")).content.decode().split('data-workflow="bare"', 1)[1]
    row = row.split("</tr>", 1)[0]
    assert "no version saved" in row and "v-" not in row
    page = client.get(reverse("console:workflow", args=["bare"]))
    assert page.status_code == 200 and "No saved version." in page.content.decode()


TYPO = GOOD.replace("depends_on: [fetch]}", "depends_on: [fetch], condition: 'fetched'}")


def test_a_document_with_a_warning_is_added_and_its_warning_shown_with_its_line(client, boss, before):
    added = client.post(ADD, {"source": TYPO}, follow=True)
    assert added.status_code == 200 and made(before) == (1, 1, 1)
    shown = [str(m) for m in added.context["messages"]]
    assert any(m.startswith("Warning unknown_name: line 5, column 76: step 'load': 'fetched' is not a name in "
                            "scope in `condition`") for m in shown), shown
    version = WorkflowVersion.objects.get(workflow__name="pasted")
    page = client.get(reverse("admin:forge_workflows_workflowversion_change", args=[version.pk])).content.decode()
    assert "unknown_name: line 5, column 76: step &#x27;load&#x27;: &#x27;fetched&#x27; is not a name" in page


def test_a_clean_document_shows_no_warning(client, boss, before):
    added = client.post(ADD, {"source": GOOD}, follow=True)
    assert not [m for m in added.context["messages"] if str(m).startswith("Warning")]
    version = WorkflowVersion.objects.get(workflow__name="pasted")
    page = client.get(reverse("admin:forge_workflows_workflowversion_change", args=[version.pk])).content.decode()
    assert "none" in page
