"""Runs and everything they leave behind: step rows, the event log, checkpoints, approvals."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from engine.interpreter.state import RunStatus, StepStatus

RUN_STATUSES = [(s, s) for s in (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.FAILED,
                                  RunStatus.CANCELLED)]
STEP_STATUSES = [(s, s) for s in (StepStatus.PENDING, StepStatus.WAITING, StepStatus.RUNNING, StepStatus.COMPLETED,
                                   StepStatus.FAILED, StepStatus.TIMED_OUT, StepStatus.SKIPPED,
                                   StepStatus.CANCELLED)]


class Run(models.Model):
    workflow = models.ForeignKey("forge_workflows.Workflow", on_delete=models.PROTECT, related_name="runs")
    version = models.ForeignKey("forge_workflows.WorkflowVersion", on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=RUN_STATUSES, default=RunStatus.PENDING, db_index=True)
    error = models.TextField(null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    args = models.JSONField(default=dict, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children",
                               help_text="the run whose sub-workflow step started this one")
    parent_step = models.CharField(max_length=64, blank=True)
    parent_attempt = models.IntegerField(null=True, blank=True)
    restarted_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="restarts")
    restart_from_step = models.CharField(max_length=64, blank=True)
    trace_id = models.UUIDField(default=uuid.uuid4, editable=False)
    restart_count = models.PositiveIntegerField(default=0, help_text="crashes the run was resumed after, each "
                                                                     "counted once however many of its steps it "
                                                                     "interrupted; past the limit the run fails "
                                                                     "with crash_loop")
    crash_after = models.DateTimeField(null=True, blank=True, help_text="the last crash counted in restart_count "
                                                                        "happened after this")
    crash_before = models.DateTimeField(null=True, blank=True, help_text="... and before this; a crash in an "
                                                                         "overlapping window is the same crash")
    context_trust = models.PositiveSmallIntegerField(default=0)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progressed_at = models.DateTimeField(default=timezone.now, help_text="last time an event was processed")
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                   help_text="when the earliest delayed event of this run falls due")
    inputs_fed = models.PositiveIntegerField(default=0)
    fences = models.PositiveIntegerField(default=0, help_text="fencing numbers handed out to step executions")
    pinned = models.JSONField(default=dict, blank=True, help_text="each agent's provider configuration, gateway "
                              "list and prices as the run started (forge/runs/pinning.py)")
    deadline_at = models.DateTimeField(null=True, blank=True, help_text="when the document's timeout ends the run")
    library = models.JSONField(default=dict, blank=True, help_text="the step library entries the run was "
                                                                   "started with")

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.workflow.name}"

    @property
    def finished(self) -> bool:
        return self.status in RunStatus.TERMINAL


# The rows below are found by run through a unique or composite index that starts with `run`, so
# their foreign keys carry no index of their own: one index less to write on every round.


class RunInput(models.Model):
    """An event waiting to be fed to the run's interpreter: the run's inbox.

    `key` makes every producer idempotent: a step attempt's completion, a
    decision and a timer each have one key, so a repeated delivery is found
    and acknowledged instead of fed twice.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="inputs", db_index=False)
    key = models.CharField(max_length=200)
    event = models.JSONField()
    due_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["due_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="run_input_once")]
        indexes = [models.Index(fields=["run", "processed_at", "due_at"], name="run_input_pending")]


class RunEvent(models.Model):
    """Append-only log of a run: every event fed and every state change, in order (what the live view streams)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    kind = models.CharField(max_length=32)
    step = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"], name="run_event_by_run")]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("run events are append-only")
        super().save(*args, **kwargs)


class Checkpoint(models.Model):
    """The interpreter's state after `inputs_fed` events; later events replay on top of it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints", db_index=False)
    inputs_fed = models.PositiveIntegerField()
    event_id = models.BigIntegerField(default=0, help_text="the last run event at the time of the checkpoint")
    state = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "-inputs_fed"]
        constraints = [models.UniqueConstraint(fields=["run", "inputs_fed"], name="checkpoint_once")]


class StepResult(models.Model):
    """One row per step per run: what the run view shows, and the lease of the attempt being executed."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps", db_index=False)
    step = models.CharField(max_length=64)
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=STEP_STATUSES, default=StepStatus.PENDING)
    wait = models.CharField(max_length=16, null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    iteration = models.PositiveIntegerField(default=0)
    agent = models.CharField(max_length=64, blank=True)
    outputs = models.JSONField(null=True, blank=True)
    stdout = models.TextField(blank=True)
    error = models.TextField(null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    tokens = models.PositiveBigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # The attempt in flight: a fencing number bumped on every (re)execution,
    # and a lease its worker renews; a result carrying an old fence is stale.
    fence = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    executing = models.BooleanField(default=False, help_text="an execute_step task owns this attempt")
    dispatch = models.JSONField(null=True, blank=True, help_text="what the engine asked the agent to do")

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "step"], name="step_result_once")]
        indexes = [models.Index(fields=["agent", "status"], name="step_result_agent_load"),
                   # The clock reads due gateway retries at every tick: only the few rows waiting for one.
                   models.Index(fields=["lease_expires_at"], condition=models.Q(lease_owner="retry"),
                                name="step_result_retry_due")]

    def __str__(self) -> str:
        return f"{self.step} ({self.status})"


class Approval(models.Model):
    """A request for a person's decision, or (kind `reply`) for a loop's free-text answer. Its status is written
    only by the run's rounds, from the interpreter's record; a person's decision or reply reaches it as an input
    of the run (`approval_decide`, `reply_give`)."""

    PENDING, APPROVED, REJECTED, EXPIRED, ANSWERED = "pending", "approved", "rejected", "expired", "answered"
    REPLY, START = "reply", "start"
    KINDS = [("approval", "approval"), ("escalation", "escalation"), ("hold", "governance hold"),
             (REPLY, "reply request"), (START, "scheduled run's start")]

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals", db_index=False)
    key = models.CharField(max_length=64, help_text="the interpreter's id for this request")
    step = models.CharField(max_length=64)
    attempt = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=KINDS)
    status = models.CharField(max_length=16, default=PENDING, db_index=True)
    options = models.JSONField(default=list)
    message = models.TextField(blank=True)
    approvers = models.JSONField(default=list, help_text="groups that may decide; empty: Approvers")
    decision = models.CharField(max_length=16, null=True, blank=True)
    comment = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    requested_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="when the step's timeout ends it undecided")
    decided_at = models.DateTimeField(null=True, blank=True)
    # A reply request's: the loop iteration it follows, that iteration's stdout (what the person answers), and the
    # answer, kept with the run (the audit has only its length and digest). A step's replies so far are its
    # answered rows by iteration.
    iteration = models.PositiveIntegerField(default=0)
    output = models.TextField(blank=True, help_text="a reply request's: the stdout of the iteration it follows")
    reply = models.TextField(blank=True, help_text="a reply request's answer")

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="approval_once")]

    def __str__(self) -> str:
        return f"{self.kind} for {self.step} in run {self.run_id} ({self.status})"


class StepOutput(models.Model):
    """What a shell step's attempt has printed so far (the last bytes of each stream, secrets replaced), written
    by the worker every half second while the command runs: the step panel's live output, and its stderr."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_index=False)
    step = models.CharField(max_length=64)
    attempt = models.PositiveIntegerField()
    stdout = models.TextField(blank=True)
    stderr = models.TextField(blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "step", "attempt"], name="step_output_once")]


class Artifact(models.Model):
    """A file a step attempt left in the run's directory and its `artifacts` globs matched, kept under
    FORGE_ARTIFACTS_DIR (`stored`), bounded by FORGE_ARTIFACT_MAX_BYTES and FORGE_ARTIFACT_RUN_MAX_BYTES."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    step = models.CharField(max_length=64)
    attempt = models.PositiveIntegerField()
    iteration = models.PositiveIntegerField(default=0)
    path = models.CharField(max_length=1024, help_text="relative to the run's directory")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    stored = models.CharField(max_length=255, help_text="its file's name under FORGE_ARTIFACTS_DIR")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "step", "attempt", "iteration", "path"]
        constraints = [models.UniqueConstraint(fields=["run", "step", "attempt", "iteration", "path"],
                                               name="artifact_once")]

    def __str__(self) -> str:
        return f"{self.path} of {self.step} in run {self.run_id}"
