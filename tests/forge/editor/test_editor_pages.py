"""The editor's pages as people meet them: New workflow (blank, an example, a copy, pasted or uploaded YAML), the
editor of a saved or new workflow, the versions page with *Restore*; read-only people see no edit control and
are refused the editor with the console's 403 page."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.workflows.models import Draft, WorkflowVersion
from forge.workflows.services import MAX_SOURCE_BYTES
from tests.forge.editor.conftest import SOURCE

pytestmark = pytest.mark.django_db
NEW = reverse("console:workflow_new")


def page(client, user, address: str, status: int = 200) -> str:
    client.force_login(user)
    response = client.get(address)
    assert response.status_code == status, response.content[:400]
    return response.content.decode()


def new_draft(client, user, **form) -> Draft:
    client.force_login(user)
    before = set(Draft.objects.values_list("pk", flat=True))
    response = client.post(NEW, form)
    draft = Draft.objects.exclude(pk__in=before).get()
    assert response.status_code == 302 and response["Location"] == reverse("console:editor_new", args=[draft.pk])
    assert draft.user == user and draft.workflow is None
    return draft


def refused(client, user, form: dict, says: str) -> None:
    client.force_login(user)
    drafts, events = Draft.objects.count(), AuditEvent.objects.count()
    response = client.post(NEW, form)
    assert response.status_code == 400
    assert says.lower() in response.content.decode().lower()  # said as a sentence, in the page's messages
    assert (Draft.objects.count(), AuditEvent.objects.count()) == (drafts, events)


# -- who sees what ---------------------------------------------------------------------------------------------------


def test_operators_get_new_workflow_and_edit_and_read_only_people_neither(client, greeter, operator, approver):
    for person, may in ((operator, True), (approver, False)):
        listing = page(client, person, reverse("console:workflows"))
        assert ('id="new-workflow"' in listing) is may
        workflow = page(client, person, reverse("console:workflow", args=["greeter"]))
        assert ('id="edit-link"' in workflow) is may
        assert reverse("console:workflow_versions", args=["greeter"]) in workflow  # history is for everyone
        versions = page(client, person, reverse("console:workflow_versions", args=["greeter"]))
        assert ('id="edit-link"' in versions) is may


def test_the_editor_and_new_workflow_answer_read_only_people_with_the_consoles_403_page(client, greeter, approver):
    for address in (reverse("console:editor", args=["greeter"]), NEW):
        html = page(client, approver, address, 403)
        assert "Forge says: You may not edit workflows." in html and 'data-status="403"' in html
    assert client.post(NEW, {"source": "blank"}).status_code == 403
    assert not Draft.objects.exists()


def test_the_editor_opens_the_persons_draft_of_the_latest_version(client, greeter, operator):
    html = page(client, operator, reverse("console:editor", args=["greeter"]))
    draft = Draft.objects.get(user=operator, workflow=greeter)
    assert draft.text == SOURCE and draft.base_version.number == 1
    assert f'data-api="{reverse("console:editor_draft", args=[draft.pk])}"' in html
    assert "draft on v1" in html and 'href="/workflows/greeter/#run"' in html
    assert re.search(r'<script type="module" src="/static/console/editor/editor\.js', html)
    page(client, operator, reverse("console:editor", args=["greeter"]))
    assert Draft.objects.filter(user=operator).count() == 1  # reopening finds the same draft
    page(client, operator, reverse("console:editor", args=["no_such_workflow"]), 404)


# -- new workflows ---------------------------------------------------------------------------------------------------


def test_the_new_workflow_page_offers_every_example_and_saved_workflow(client, greeter, operator):
    html = page(client, operator, NEW)
    for example in sorted((settings.BASE_DIR / "examples").glob("*.yaml")):
        assert f'<option value="{example.stem}">' in html
    assert '<option value="greeter">' in html


def test_blank_starts_a_draft_with_a_name_no_workflow_has(client, operator, save_workflow):
    save_workflow(SOURCE.replace("name: greeter", "name: new_workflow"), operator)
    draft = new_draft(client, operator, source="blank")
    assert draft.text.startswith("name: new_workflow_2\n") and "steps: []" in draft.text
    assert AuditEvent.objects.filter(code="forge.draft.created", target=f"draft:{draft.pk}").exists()
    html = page(client, operator, reverse("console:editor_new", args=[draft.pk]))
    assert "New workflow" in html and "draft, never saved" in html


def test_an_example_a_copy_and_pasted_yaml_start_drafts_with_their_exact_text(client, greeter, operator):
    example = (settings.BASE_DIR / "examples" / "code_review.yaml").read_text(encoding="utf-8")
    assert new_draft(client, operator, source="example", example="code_review").text == example
    assert new_draft(client, operator, source="workflow", workflow="greeter").text == SOURCE
    pasted = "# kept as pasted\r\nname: pasted\r\nsteps:\r\n  - {id: a, agent: mock, command: x}\r\n"
    assert new_draft(client, operator, source="paste", yaml=pasted).text == pasted.replace("\r\n", "\n")


def test_an_uploaded_file_starts_a_draft_byte_for_byte(client, operator):
    text = "\ufeffname: uploaded  # ünïcode\r\nsteps:\r\n  - {id: a, agent: mock, command: x}\r\n"
    upload = SimpleUploadedFile("wf.yaml", text.encode("utf-8"), content_type="application/x-yaml")
    assert new_draft(client, operator, source="upload", file=upload).text == text


@pytest.mark.parametrize("form, says", [
    ({}, "choose how the workflow starts"),
    ({"source": "evil"}, "choose how the workflow starts"),
    ({"source": "example", "example": "../../forge/settings"}, "there is no such example"),
    ({"source": "workflow", "workflow": "no_such"}, "there is no saved workflow by that name"),
    ({"source": "paste", "yaml": "  \n "}, "the YAML is empty"),
    ({"source": "paste", "yaml": "a" * (MAX_SOURCE_BYTES + 1)}, "a workflow is at most 1,048,576 bytes"),
    ({"source": "upload"}, "choose a file to upload"),
])
def test_a_bad_choice_is_refused_in_words_and_starts_nothing(client, operator, form, says):
    refused(client, operator, form, says.replace("'", "&#x27;"))


@pytest.mark.parametrize("content, says", [
    (b"name: x\nsteps: [\xff\xfe]\n", "the file is not UTF-8 text (byte 17 cannot be read)"),
    (b"name: x\x00\n", "the file holds NUL bytes"),
    (b"a" * (MAX_SOURCE_BYTES + 1), "the file is 1,048,577 bytes; a workflow is at most 1,048,576 bytes"),
    (b"", "the YAML is empty"),
])
def test_a_bad_upload_gets_a_clear_error_and_changes_nothing(client, operator, content, says):
    refused(client, operator, {"source": "upload", "file": SimpleUploadedFile("bad.yaml", content)}, says)


def test_a_draft_is_only_its_owners_and_a_saved_one_opens_as_its_workflow(client, operator, admin_user, greeter):
    draft = new_draft(client, operator, source="blank")
    page(client, admin_user, reverse("console:editor_new", args=[draft.pk]), 404)
    Draft.objects.filter(pk=draft.pk).update(workflow=greeter)
    client.force_login(operator)
    response = client.get(reverse("console:editor_new", args=[draft.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("console:editor", args=["greeter"])


# -- versions --------------------------------------------------------------------------------------------------------


@pytest.fixture
def three_versions(greeter, operator, save_workflow):
    from forge.workflows.editing import draft_open, draft_save

    for n, message in ((2, "louder"), (3, "quieter")):
        draft = draft_open(operator, greeter)
        draft_save(operator, draft, SOURCE.replace("say hello", f"say hello {n}"), message, n - 1)
    return greeter


def test_the_versions_page_lists_who_when_and_the_message_and_diffs_the_last_two(client, three_versions, approver):
    html = page(client, approver, reverse("console:workflow_versions", args=["greeter"]))
    rows = re.findall(r'<tr data-version="(\d+)">(.*?)</tr>', html, re.S)
    assert [n for n, _ in rows] == ["3", "2", "1"]
    assert "olive" in rows[0][1] and "quieter" in rows[0][1] and "louder" in rows[1][1]
    assert 'id="a" name="a" min="1" max="3" value="2"' in html and 'id="b" name="b" min="1" max="3" value="3"' in html
    assert "/editor/diff?workflow=greeter&amp;a=2&amp;b=3" in html
    assert "Restore" not in html  # read-only: no edit control


def test_the_versions_page_reads_no_version_text(client, three_versions, approver):
    """A workflow has as many versions as saves, each up to 1 MiB: the list reads who, when and the message only
    (the diff endpoint reads the two texts compared)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(approver)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("console:workflow_versions", args=["greeter"])).status_code == 200
    listed = [q["sql"] for q in queries if 'FROM "forge_workflows_workflowversion"' in q["sql"]]
    assert listed and not [sql for sql in listed if '"forge_workflows_workflowversion"."source"' in sql]


@pytest.mark.parametrize("query", ["a=1&b=3", "a=3&b=1", "a=x&b=1;drop", "a=99999999999&b=-1", "a=&b="])
def test_any_two_versions_may_be_chosen_and_a_bad_choice_falls_back(client, three_versions, operator, query):
    html = page(client, operator, reverse("console:workflow_versions", args=["greeter"]) + "?" + query)
    wanted = dict(pair.split("=") for pair in query.split("&"))
    a = wanted["a"] if wanted["a"] in "123" and wanted["a"] else "2"
    b = wanted["b"] if wanted["b"] in "123" and wanted["b"] else "3"
    assert f"a={a}&amp;b={b}" in html


def test_restore_saves_an_old_version_as_the_newest_with_the_message(client, three_versions, operator):
    html = page(client, operator, reverse("console:workflow_versions", args=["greeter"]))
    assert html.count('class="restore"') == 2  # every version but the latest
    restore = reverse("console:version_restore", args=["greeter"])
    response = client.post(restore, {"version": 1, "message": "back to the start"})
    assert response.status_code == 302
    newest = three_versions.versions.order_by("-number").first()
    assert (newest.number, newest.source, newest.message) == (4, SOURCE, "back to the start")
    event = AuditEvent.objects.filter(code="forge.workflow.version_saved").latest("pk")
    assert event.detail["version"] == 4 and event.detail["message"] == "back to the start"
    assert "v1 restored as v4." in page(client, operator, response["Location"])


def test_restore_is_refused_to_read_only_people_and_for_unknown_versions(client, three_versions, approver, operator):
    client.force_login(approver)
    assert client.post(reverse("console:version_restore", args=["greeter"]), {"version": 1}).status_code == 403
    client.force_login(operator)
    restore = reverse("console:version_restore", args=["greeter"])
    for hostile in (9, "1;drop", "", "9" * 40):
        assert client.post(restore, {"version": hostile}).status_code == 404
    response = client.post(restore, {"version": 3})
    assert "Version 3 is the latest version already." in page(client, operator, response["Location"])
    assert WorkflowVersion.objects.filter(workflow=three_versions).count() == 3
