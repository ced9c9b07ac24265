"""Workflows and their immutable versions; the step library."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from forge.write_once import WriteOnceQuerySet

IMMUTABLE = "a workflow version is immutable; save a new version instead"


def content_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class Workflow(models.Model):
    name = models.CharField(max_length=128, unique=True, help_text="the document's `name`")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> WorkflowVersion | None:
        return self.versions.order_by("-number").first()


class ImmutableVersions(WriteOnceQuerySet):
    def refused(self) -> Exception:
        return ValueError(IMMUTABLE)


class WorkflowVersion(models.Model):
    """One saved text of a workflow. Never changed once written: a run pins it."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    source = models.TextField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # PROTECT: a version is never rewritten, so its author cannot be deleted (Django admin says so and offers to
    # deactivate instead); SET_NULL would rewrite it, which the queryset refuses (a 500 on deleting anyone).
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    message = models.CharField(max_length=500, blank=True, help_text="what the person who saved it said of it")

    objects = ImmutableVersions.as_manager()

    class Meta:
        ordering = ["workflow", "number"]
        base_manager_name = "objects"
        constraints = [
            models.UniqueConstraint(fields=["workflow", "number"], name="workflow_version_number"),
        ]
        # Not unique: restoring an old version makes its text the newest version again.
        indexes = [models.Index(fields=["workflow", "content_hash"], name="workflow_version_content")]

    def __str__(self) -> str:
        return f"{self.workflow.name} v{self.number}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError(IMMUTABLE)
        self.content_hash = content_hash(self.source)
        super().save(*args, **kwargs)


class StepLibraryEntry(models.Model):
    """A named step definition that `library_step: NAME` merges under a workflow's own fields."""

    name = models.CharField(max_length=64, unique=True)
    description = models.TextField(blank=True)
    definition = models.JSONField(help_text="step fields, e.g. {\"agent\": \"shell\", \"command\": \"...\"}")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "step library entries"

    def __str__(self) -> str:
        return self.name

    def clean(self):
        if not isinstance(self.definition, dict):
            raise ValidationError({"definition": "a library step is a JSON object of step fields"})


class GraphLayout(models.Model):
    """Where each step of a version's graph is drawn, computed once (by the first browser that draws it) and
    kept by the version's content hash, so every later page draws at once and a status change never lays out."""

    content_hash = models.CharField(max_length=64, unique=True)
    positions = models.JSONField(help_text='step id -> {"x": number, "y": number}')
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"layout {self.content_hash[:12]}"


class Draft(models.Model):
    """One person's unsaved text of a workflow in the editor: it survives a reload until saved or discarded.

    `workflow` is None for a workflow not saved yet; `base_version` is the version the text was started from (a
    save based on an older version than the latest is a conflict to merge). `revision` grows with every write
    from the page, so a late write of older text is ignored. `placements` holds where the person put the steps of
    a workflow not saved yet (a saved workflow keeps them in StepPlacement)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    workflow = models.ForeignKey(Workflow, null=True, blank=True, on_delete=models.CASCADE, related_name="drafts")
    base_version = models.ForeignKey(WorkflowVersion, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="+")
    text = models.TextField(blank=True)
    revision = models.PositiveBigIntegerField(default=0)
    placements = models.JSONField(default=dict, blank=True, help_text='step id -> {"x": number, "y": number}')
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "workflow"], condition=models.Q(workflow__isnull=False),
                                    name="one_draft_per_person_per_workflow"),
        ]

    def __str__(self) -> str:
        return f"draft {self.pk} of {self.workflow or 'a new workflow'} by {self.user_id}"


class StepPlacement(models.Model):
    """Where a person put a step of a workflow on its graph, by step id: the truth for the workflow page, the
    editor and the run view alike. Not part of the YAML (moving a step changes no version); ELK lays out only
    the steps nobody placed (GraphLayout caches that)."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="placements")
    step_id = models.CharField(max_length=64)
    x = models.FloatField()
    y = models.FloatField()
    placed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    placed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workflow", "step_id"]
        constraints = [models.UniqueConstraint(fields=["workflow", "step_id"], name="one_placement_per_step")]

    def __str__(self) -> str:
        return f"{self.workflow} {self.step_id} at ({self.x:g}, {self.y:g})"
