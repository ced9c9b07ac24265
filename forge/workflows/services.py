"""Saving workflows: every save is validated and becomes an immutable, content-hashed version."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from engine.problems import Problem
from engine.validation import Report, validate_source
from engine.yamlload import Loaded
from forge.accounts.roles import can
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import Conflict, Forbidden, Invalid
from forge.governance.models import Agent
from forge.workflows.models import StepLibraryEntry, Workflow, WorkflowVersion, content_hash

MAX_SOURCE_BYTES = 1_048_576


class WorkflowRejected(Invalid):
    """The document is not a valid workflow; `problems` says every reason, with positions."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        first = problems[0]
        where = f" (line {first.line})" if first.line else ""
        more = f"; {len(problems) - 1} more problem(s)" if len(problems) > 1 else ""
        super().__init__(f"{first.message}{where}{more}", code="invalid_workflow",
                         problems=[problem.to_json() for problem in problems])


class WorkflowConflict(Conflict, WorkflowRejected):
    """Another save of the same workflow won the race; trying again takes."""


def step_library() -> dict[str, dict]:
    """The step library as the engine takes it: name -> step fields."""
    return {entry.name: entry.definition for entry in StepLibraryEntry.objects.all()}


def shell_agents() -> tuple[str, ...]:
    """The agents whose commands run in a shell, as the engine takes them (`shell` when none is configured)."""
    return tuple(Agent.objects.filter(provider="shell").order_by("name").values_list("name", flat=True)) or ("shell",)


def workflow_validate(*, source: str, loaded: Loaded | None = None) -> Report:
    """Every problem saving `source` would refuse it for, with this installation's step library and shell agents.
    `loaded`: the bounded load of `source`, when the caller has it already."""
    if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
        return Report(problems=[Problem("too_large", "the document is larger than 1 MiB")])
    return validate_source(source, library=step_library(), shell_agents=shell_agents(), loaded=loaded)


def workflow_version_save(*, user, source: str, description: str = "", message: str = "") -> WorkflowVersion:
    """Validate `source` and store it as the next version of the workflow it names, with the saver's `message`.

    Saving the same text again returns the existing version (workflow_version_put says which it was).
    """
    return workflow_version_put(user=user, source=source, description=description, message=message)[0]


def workflow_version_put(*, user, source: str, description: str = "",
                         message: str = "") -> tuple[WorkflowVersion, bool]:
    """As workflow_version_save, with whether this call added the version (False: the text was one already)."""
    if user is not None and not can(user, "workflow.edit"):
        raise Forbidden("you may not edit workflows")
    report = workflow_validate(source=source)
    if not report.valid:
        raise WorkflowRejected(report.problems)
    document = report.workflow.document
    for _ in range(3):  # two people saving the same new workflow at once: the loser retries
        try:
            with transaction.atomic():
                return _save(user, source, document.name, description or (document.description or ""), message)
        except IntegrityError:
            continue
    raise WorkflowConflict([Problem("conflict", "the workflow changed while it was being saved; try again")])


def _save(user, source: str, name: str, description: str, message: str) -> tuple[WorkflowVersion, bool]:
    digest = content_hash(source)
    existing = WorkflowVersion.objects.filter(workflow__name=name, content_hash=digest).order_by("-number").first()
    if existing is not None:
        return existing, False
    # NO KEY UPDATE: numbering versions must not wait on runs that merely reference the workflow.
    workflow, created = Workflow.objects.select_for_update(no_key=True).get_or_create(
        name=name, defaults={"description": description, "created_by": user})
    existing = workflow.versions.filter(content_hash=digest).order_by("-number").first()
    if existing is not None:
        return existing, False
    return version_append(user=user, workflow=workflow, source=source, description=description, message=message,
                          created=created), True


def version_append(*, user, workflow: Workflow, source: str, description: str, message: str,
                   created: bool) -> WorkflowVersion:
    """The next version of `workflow`, audited with the content hashes before and after and the message.

    The caller checked the text and permission, and holds `workflow` locked in its transaction."""
    latest = workflow.versions.order_by("-number").only("number", "content_hash").first()
    version = WorkflowVersion.objects.create(workflow=workflow, number=(latest.number if latest else 0) + 1,
                                             source=source, created_by=user, message=message)
    if description and workflow.description != description:
        workflow.description = description
        workflow.save(update_fields=["description"])
    audit(codes.WORKFLOW_CREATED if created else codes.WORKFLOW_VERSION_SAVED, user=user,
          target=f"workflow:{workflow.name}",
          detail={"version": version.number, "before": latest.content_hash if latest else None,
                  "after": version.content_hash, "message": message})
    return version
