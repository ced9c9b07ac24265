"""Saving workflows: validated, content-addressed, immutable versions; the examples shipped by migration."""

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied

from forge.audit.models import AuditEvent
from forge.governance.models import Agent
from forge.workflows.models import StepLibraryEntry, Workflow, WorkflowVersion
from forge.workflows.services import WorkflowRejected, workflow_version_put, workflow_version_save

SOURCE = """
name: greeter
description: Says hello
steps:
  - id: hello
    agent: mock
    command: say hello
"""

CHANGED = SOURCE.replace("say hello", "say hello twice")

INVALID = """name: broken
steps:
  - id: a
    agent: mock
    command: x
    depends_on: [nope]
    colour: red
"""


def test_saving_a_new_document_creates_version_1(operator):
    version = workflow_version_save(user=operator, source=SOURCE)
    assert (version.workflow.name, version.number, version.source) == ("greeter", 1, SOURCE)
    assert version.created_by == operator
    assert version.workflow.description == "Says hello"
    assert len(version.content_hash) == 64
    event = AuditEvent.objects.get(code="forge.workflow.created")
    assert (event.actor, event.target, event.detail) == ("olive", "workflow:greeter", {
        "version": 1, "before": None, "after": version.content_hash, "message": ""})


def test_saving_the_same_text_again_returns_the_same_version(operator, admin_user):
    first = workflow_version_save(user=operator, source=SOURCE)
    again = workflow_version_save(user=admin_user, source=SOURCE)
    assert again.pk == first.pk
    assert WorkflowVersion.objects.filter(workflow__name="greeter").count() == 1
    assert AuditEvent.objects.filter(target="workflow:greeter").count() == 1


def test_put_says_whether_it_added_the_version(operator):
    first, added = workflow_version_put(user=operator, source=SOURCE)
    assert (first.number, added) == (1, True)
    assert workflow_version_put(user=operator, source=SOURCE) == (first, False)
    assert workflow_version_put(user=operator, source=CHANGED)[0].number == 2
    assert workflow_version_put(user=operator, source=SOURCE) == (first, False)  # an older text: still version 1


def test_a_changed_text_becomes_version_2_and_version_1_is_kept(operator):
    first = workflow_version_save(user=operator, source=SOURCE)
    second = workflow_version_save(user=operator, source=CHANGED)
    assert (second.workflow_id, second.number) == (first.workflow_id, 2)
    assert second.content_hash != first.content_hash
    assert Workflow.objects.get(name="greeter").latest_version() == second
    assert WorkflowVersion.objects.get(pk=first.pk).source == SOURCE
    assert AuditEvent.objects.filter(code="forge.workflow.version_saved", detail__version=2).count() == 1
    assert workflow_version_save(user=operator, source=SOURCE).pk == first.pk  # going back finds version 1


def test_an_invalid_document_is_rejected_with_every_problem_and_creates_nothing(operator):
    workflows, versions, audits = Workflow.objects.count(), WorkflowVersion.objects.count(), AuditEvent.objects.count()
    with pytest.raises(WorkflowRejected) as caught:
        workflow_version_save(user=operator, source=INVALID)
    problems = {(p.code, p.step, p.line) for p in caught.value.problems}
    assert problems == {("unknown_dependency", "a", 6), ("unknown_key", "a", 7)}
    assert "(line 6)" in str(caught.value) and "1 more problem" in str(caught.value)
    assert (Workflow.objects.count(), WorkflowVersion.objects.count(), AuditEvent.objects.count()) == (
        workflows, versions, audits)
    assert not Workflow.objects.filter(name="broken").exists()


@pytest.mark.parametrize("source", ["", "steps: [", "- just\n- a list\n", "name: x\nsteps: []\n"])
def test_unreadable_documents_are_rejected_too(operator, source):
    versions = WorkflowVersion.objects.count()
    with pytest.raises(WorkflowRejected) as caught:
        workflow_version_save(user=operator, source=source)
    assert caught.value.problems and all(p.code for p in caught.value.problems)
    assert WorkflowVersion.objects.count() == versions


def test_a_saved_version_cannot_be_modified(operator):
    version = workflow_version_save(user=operator, source=SOURCE)
    version.source = CHANGED
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    stored = WorkflowVersion.objects.get(pk=version.pk)
    assert (stored.source, stored.number) == (SOURCE, 1)


def test_a_queryset_update_cannot_rewrite_a_saved_version(operator):
    version = workflow_version_save(user=operator, source=SOURCE)
    try:
        WorkflowVersion.objects.filter(pk=version.pk).update(source=CHANGED)
    except ValueError:
        pass
    assert WorkflowVersion.objects.get(pk=version.pk).source == SOURCE


@pytest.mark.parametrize("who", ["outsider", "approver"])
def test_people_who_may_not_edit_workflows_cannot_save(db, request, who):
    versions = WorkflowVersion.objects.count()
    with pytest.raises(PermissionDenied):
        workflow_version_save(user=request.getfixturevalue(who), source=SOURCE)
    assert WorkflowVersion.objects.count() == versions
    assert not Workflow.objects.filter(name="greeter").exists()


def test_the_example_workflows_are_loaded_by_the_migration(db):
    shipped = {path.stem for path in (settings.BASE_DIR / "examples").glob("*.yaml")}
    assert {"vendor_review", "flaky_retry_escalation", "shell_pipeline", "code_review", "interview"} <= shipped
    assert shipped <= set(Workflow.objects.values_list("name", flat=True))
    for name in shipped:
        version = Workflow.objects.get(name=name).latest_version()
        assert version.number == 1
        assert f"name: {name}" in version.source


def test_the_built_in_agents_exist(db):
    agents = {a.name: a for a in Agent.objects.filter(name__in=["mock", "shell", "python"])}
    assert {name: a.provider for name, a in agents.items()} == {"mock": "mock", "shell": "shell", "python": "python"}
    assert all(a.enabled and a.status == "active" for a in agents.values())


def test_a_library_step_the_empty_library_lacks_is_refused_and_nothing_is_saved(operator):
    """The server always knows its step library, even an empty one: a step naming an entry it lacks is a problem,
    not a step left for the runner to resolve (which would fail only when the run starts)."""
    assert not StepLibraryEntry.objects.exists()
    with pytest.raises(WorkflowRejected) as refused:
        workflow_version_save(user=operator, source=SOURCE.replace("    agent: mock\n    command: say hello\n",
                                                                   "    library_step: greet\n"))
    assert "unknown_reference" in [p.code for p in refused.value.problems]
    assert not Workflow.objects.filter(name="greeter").exists()
