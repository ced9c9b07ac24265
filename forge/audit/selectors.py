"""Reading the audit trail."""

from __future__ import annotations

from django.db.models import QuerySet

from forge.accounts.roles import can
from forge.audit.models import AuditEvent


def audit_for_user(user) -> QuerySet[AuditEvent]:
    """The audit events `user` may read: all of them for a member of a group (who may open the console's audit
    page), none for anyone else."""
    if not can(user, "run.view"):  # roles has no action of its own for reading the trail yet
        return AuditEvent.objects.none()
    return AuditEvent.objects.all()
