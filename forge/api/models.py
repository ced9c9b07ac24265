"""What the API keeps between requests: the answers of idempotent writes (forge/api/idempotency.py)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """One `Idempotency-Key` a client sent with a write, and the answer it got. `status` is null while the first
    request is still being handled. Kept 24 hours per owner (a token, or a person signed in to the console)."""

    owner = models.CharField(max_length=40, help_text="whose key: 'token:<id>' or 'user:<id>'")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the request's method, path and body")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="the stored answer's status")
    headers = models.JSONField(default=dict, blank=True, help_text="the stored answer's headers that are replayed")
    body = models.BinaryField(default=b"", blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotency_key_once_per_owner")]

    def __str__(self) -> str:
        return f"{self.owner} {self.key}"
