"""Writing the audit trail. Every state change calls `audit` inside its own transaction."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from forge.audit.models import AuditEvent

SYSTEM = "system"


def actor_of(user) -> tuple[str, int | None]:
    if user is None or not getattr(user, "is_authenticated", False):
        return SYSTEM, None
    return user.get_username(), user.pk


def audit_event(code: str, *, user=None, run_id: int | None = None, step: str = "", attempt: int | None = None,
                target: str = "", detail: dict[str, Any] | None = None, key: str | None = None,
                at=None) -> AuditEvent:
    """One audit event, not yet written (the target defaults to the run)."""
    actor, actor_id = actor_of(user)
    token = getattr(user, "forge_token", None)  # set by forge/api/auth.py: a change through a token names it
    return AuditEvent(code=code, actor=actor, actor_id=actor_id, run_id=run_id, step=step, attempt=attempt,
                      target=target or (f"run:{run_id}" if run_id else ""), detail=detail or {}, key=key,
                      at=at or timezone.now(), token_id=token.pk if token is not None else None)


def audit(code: str, *, user=None, run_id: int | None = None, step: str = "", attempt: int | None = None,
          target: str = "", detail: dict[str, Any] | None = None, key: str | None = None) -> AuditEvent:
    """Append one audit event; with `key`, a second call with the same key writes nothing."""
    event = audit_event(code, user=user, run_id=run_id, step=step, attempt=attempt, target=target, detail=detail,
                        key=key)
    if key is None:
        event.save(force_insert=True)
    else:
        AuditEvent.objects.bulk_create([event], ignore_conflicts=True)
    return event
