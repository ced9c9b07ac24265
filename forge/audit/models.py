"""The audit trail: who did what, when. Append-only: code has no path that updates or deletes a row."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from engine.secrets import redact_secrets
from forge.write_once import WriteOnceQuerySet


class AppendOnly(Exception):
    """Raised on any attempt to change or remove an audit row."""


class AuditQuerySet(WriteOnceQuerySet):
    def refused(self) -> Exception:
        return AppendOnly("audit events are never updated or rewritten")

    def delete(self):
        raise AppendOnly("audit events are never deleted")


class AuditEvent(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    code = models.CharField(max_length=80, db_index=True, help_text="what happened, e.g. forge.run.started")
    actor = models.CharField(max_length=150, help_text="a username, or 'system' for the runtime")
    actor_id = models.BigIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    step = models.CharField(max_length=64, blank=True)
    attempt = models.IntegerField(null=True, blank=True)
    target = models.CharField(max_length=200, blank=True, help_text="what it happened to, e.g. agent:mock")
    detail = models.JSONField(default=dict, blank=True)
    token_id = models.BigIntegerField(null=True, blank=True, help_text="the API token the change came through")
    # Effects a redelivered task may repeat carry a key, so they are written once.
    key = models.CharField(max_length=200, null=True, blank=True, unique=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        base_manager_name = "objects"
        indexes = [models.Index(fields=["target", "code", "at"], name="audit_by_target")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.code} {self.target}"

    @property
    def shown_detail(self) -> dict:
        """The detail as every page, export and API shows it: what may be a secret (a literal one a configuration
        saved before they were refused copied here, an environment or header value, a URL's userinfo, query or
        fragment) redacted, as rows are never rewritten."""
        return redact_secrets(self.detail)

    def save(self, *args, **kwargs):
        if self.pk is not None and not kwargs.get("force_insert"):
            raise AppendOnly("audit events are never updated")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("audit events are never deleted")
