"""Schedules (seed 004): a workflow started on a cron expression, the record of every due time, and the
kill switch that stops them all."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.timezone import now

from forge.schedules.timing import MAX_CRON, validate_cron, validate_timezone


class Dispatch:
    """What became of one due time: dispatched, or one structured reason why no run started."""

    DISPATCHED = "dispatched"
    KILL_SWITCH = "kill_switch"
    BUDGET_EXCEEDED = "budget_exceeded"
    VALIDATION_FAILED = "validation_failed"
    OVERLAP = "overlap"
    QUEUED = "queued"
    NOT_PERMITTED = "not_permitted"
    DROPPED = "dropped"  # a queued due time the schedule's pause or deletion abandoned
    ALL = (DISPATCHED, KILL_SWITCH, BUDGET_EXCEEDED, VALIDATION_FAILED, OVERLAP, QUEUED, NOT_PERMITTED, DROPPED)
    CHOICES = [(status, status.replace("_", " ")) for status in ALL]


class Schedule(models.Model):
    SKIP, QUEUE_ONE, CANCEL_RUNNING = "skip", "queue_one", "cancel_running"
    OVERLAP_POLICIES = [
        (SKIP, "skip: no new run while one is in flight"),
        (QUEUE_ONE, "queue one: start it when the run in flight ends"),
        (CANCEL_RUNNING, "cancel running: cancel the run in flight, then start"),
    ]

    workflow = models.ForeignKey("forge_workflows.Workflow", on_delete=models.PROTECT, related_name="schedules",
                                 help_text="each due time starts the workflow's latest version")
    cron = models.CharField(max_length=MAX_CRON, validators=[validate_cron],
                            help_text="five fields, minute hour day month weekday, e.g. 0 9 * * 1-5")
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone],
                                help_text="the IANA time zone the cron expression is read in, e.g. Europe/Berlin")
    args = models.JSONField(default=dict, blank=True, help_text="the run's arguments, e.g. {\"vendor_name\": "
                                                                "\"Acme\"}")
    enabled = models.BooleanField(default=True)
    require_approval = models.BooleanField(default=False, help_text="each due time starts its run held before its "
                                                                     "first step, for the approvers to decide")
    approvers = models.JSONField(default=list, blank=True, help_text="groups that may approve its runs; empty: "
                                                                     "Approvers")
    overlap = models.CharField(max_length=16, choices=OVERLAP_POLICIES, default=SKIP,
                               help_text="what a due time does while a run it started is still in flight")
    # Runs start with the owner's permissions; None is the system (the CLI without --user). PROTECT: a
    # person who still owns schedules is deactivated (their schedules then refuse), not deleted.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    next_fire_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                        help_text="the next due time (UTC); empty while paused")
    queued_due_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                         help_text="queue_one: the due time waiting for the run in flight")
    last_dispatch_status = models.CharField(max_length=20, choices=Dispatch.CHOICES, blank=True)
    last_dispatch_at = models.DateTimeField(null=True, blank=True)
    last_dispatch_detail = models.TextField(blank=True)
    last_run = models.ForeignKey("forge_runs.Run", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"schedule {self.pk}: {self.workflow.name} at {self.cron} ({self.timezone})"


class ScheduleFire(models.Model):
    """One due time of one schedule. Its unique key is what fires each due time at most once, however
    many clusters tick: the second insert fails and that cluster starts nothing."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="fires", db_index=False)
    due_at = models.DateTimeField()
    status = models.CharField(max_length=20, choices=Dispatch.CHOICES)
    message = models.TextField(blank=True)
    run = models.ForeignKey("forge_runs.Run", null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="schedule_fires")
    at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["-due_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["schedule", "due_at"], name="schedule_fire_once")]

    def __str__(self) -> str:
        return f"schedule {self.schedule_id} at {self.due_at:%Y-%m-%d %H:%M} UTC: {self.status}"


class KillSwitch(models.Model):
    """One row (id 1): while engaged, no schedule starts a run. Read it through selectors.kill_switch()."""

    ONLY = 1

    engaged = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "kill switch"
        verbose_name_plural = "kill switch"

    def __str__(self) -> str:
        return "engaged" if self.engaged else "off"
