"""Reading workflows."""

from __future__ import annotations

from django.db.models import QuerySet

from forge.accounts.roles import can
from forge.workflows.models import Workflow


def workflows_for_user(user) -> QuerySet[Workflow]:
    """The workflows `user` may see: every one for a member of a group (who may open the console's workflow
    pages; with a token, one holding a scope that reads workflows), none for anyone else."""
    if not can(user, "workflow.view"):
        return Workflow.objects.none()
    return Workflow.objects.all()
