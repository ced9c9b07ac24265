"""Reading the audit trail."""

from __future__ import annotations

from django.db.models import QuerySet

from forge.accounts.roles import can
from forge.audit.models import AuditEvent


def audit_for_user(user) -> QuerySet[AuditEvent]:
    """The audit events `user` may read: all of them for whom `audit.view` allows (a member of any group, with a
    token holding audit:read when they came with one), none for anyone else."""
    if not can(user, "audit.view"):
        return AuditEvent.objects.none()
    return AuditEvent.objects.all()
