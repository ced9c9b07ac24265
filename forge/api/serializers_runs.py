"""How the API shows runs, their steps and approvals: the facts the console's run view, step panel and inbox show,
with every argument that reads as a secret redacted as the console redacts it (forge/runs/reads/secret_args.py)."""

from __future__ import annotations

import json

from rest_framework import serializers

from engine.secrets import redact_secrets
from forge.runs.reads.secret_args import hider


def _hide(run, value):
    """`value` with the run's secret-reading arguments replaced, as the step panel and the log show it."""
    return hider(run.args)(value)


class RunOut(serializers.Serializer):
    """A run as the runs list shows it."""

    id = serializers.IntegerField(source="pk")
    workflow = serializers.CharField(source="workflow.name")
    version = serializers.IntegerField(source="version.number")
    status = serializers.CharField()
    error = serializers.SerializerMethodField()
    error_code = serializers.CharField(allow_null=True)
    args = serializers.SerializerMethodField()
    started_by = serializers.SerializerMethodField()
    parent = serializers.IntegerField(source="parent_id", allow_null=True)
    restarted_from = serializers.IntegerField(source="restarted_from_id", allow_null=True)
    restart_from_step = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_error(self, run) -> str | None:
        return _hide(run, run.error)

    def get_args(self, run) -> dict:
        return redact_secrets(run.args)  # as the run's header and the audit trail show them

    def get_started_by(self, run) -> str | None:
        return run.started_by.get_username() if run.started_by_id else None


class StepOut(serializers.Serializer):
    """One row of the run view's steps table (forge/runs/reads/run_view.py's Node)."""

    id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField()
    phase = serializers.CharField()
    deps = serializers.ListField(child=serializers.CharField())
    status = serializers.CharField()
    word = serializers.CharField(help_text="the status as the console words it")
    wait = serializers.CharField(allow_null=True)
    why = serializers.CharField(help_text="why the step is not running, in words")
    attempt = serializers.IntegerField()
    iteration = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    cost = serializers.FloatField()
    tokens = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    error_code = serializers.CharField(allow_null=True)
    child_run = serializers.IntegerField(allow_null=True)
    carried = serializers.BooleanField(help_text="carried from the run this one restarted, not run again")

    def to_representation(self, node):
        data = super().to_representation(node)
        hide = self.context["hide"]
        data["error"], data["why"] = hide(data["error"]), hide(data["why"])
        return data


class RunDetailOut(RunOut):
    """A run with its steps, in the workflow's order, and its pending approvals' ids."""

    steps = serializers.SerializerMethodField()
    approvals = serializers.SerializerMethodField()
    last_event_id = serializers.SerializerMethodField()

    def get_steps(self, run) -> list[dict]:
        view = self.context["view_of_run"]
        return StepOut(view.nodes, many=True, context={"hide": hider(run.args)}).data

    def get_approvals(self, run) -> list[int]:
        return [approval.pk for approval in self.context["view_of_run"].approvals]

    def get_last_event_id(self, run) -> int:
        return self.context["view_of_run"].last_event_id


class AttemptOut(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    error_code = serializers.CharField(allow_null=True)
    decisions = serializers.ListField(child=serializers.DictField(), help_text="the governance gates' decisions")


class WaitOut(serializers.Serializer):
    kind = serializers.CharField(help_text="queue, backoff, escalation, approval, hold, sub-run or reply")
    says = serializers.CharField()
    after = serializers.IntegerField(help_text="the attempt it follows (0: before the first)")
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)


class StepAttemptsOut(serializers.Serializer):
    """A step's attempts and the waits between them, as the step panel's table shows them."""

    step = serializers.CharField()
    status = serializers.CharField()
    attempts = serializers.SerializerMethodField()
    waits = serializers.SerializerMethodField()

    def get_attempts(self, times) -> list[dict]:
        hide = self.context["hide"]
        found = AttemptOut(times.attempts, many=True).data
        for attempt in found:
            attempt["error"] = hide(attempt["error"])
            attempt["decisions"] = hide(attempt["decisions"])
        return found

    def get_waits(self, times) -> list[dict]:
        return WaitOut(times.waits, many=True).data


class CallOut(serializers.Serializer):
    """One call of a loop step (spec section 9), as the step panel lists it (secrets already hidden there)."""

    name = serializers.CharField(help_text="review, review_fix_1, ask_iter_1, ...")
    kind = serializers.CharField(help_text="iteration, review or fix")
    iteration = serializers.IntegerField()
    cycle = serializers.IntegerField(allow_null=True)
    attempt = serializers.IntegerField()
    agent = serializers.CharField()
    command = serializers.CharField()
    stdout = serializers.CharField()
    outputs = serializers.SerializerMethodField()
    verdict = serializers.CharField(allow_null=True)
    reply = serializers.CharField(allow_null=True, help_text="the answer that followed the iteration")
    reply_by = serializers.CharField()
    seconds = serializers.FloatField(allow_null=True)
    cost = serializers.FloatField()
    tokens = serializers.IntegerField()

    def get_outputs(self, call) -> dict | None:
        return json.loads(call.outputs) if call.outputs else None  # the panel's JSON text, read back


class ArtifactOut(serializers.Serializer):
    path = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    attempt = serializers.IntegerField()
    iteration = serializers.IntegerField()


class StepOutputsOut(serializers.Serializer):
    """What a step was given and returned, what its current attempt printed, a loop step's calls and the artifacts
    it kept (the step panel's)."""

    step = serializers.CharField(source="row.step")
    status = serializers.CharField(source="row.status")
    attempt = serializers.IntegerField(source="row.attempt")
    outputs = serializers.SerializerMethodField()
    given = serializers.SerializerMethodField()
    stdout = serializers.CharField()
    stderr = serializers.CharField(source="printed_stderr")
    calls = CallOut(many=True)
    artifacts = ArtifactOut(many=True)

    def get_outputs(self, panel) -> dict | None:
        return _hide(panel.run, panel.row.outputs)

    def get_given(self, panel) -> dict | None:
        return _hide(panel.run, panel.row.dispatch)

    def to_representation(self, panel):
        data = super().to_representation(panel)
        data["stdout"] = panel.stdout or panel.printed_stdout  # a shell step's output so far, while it runs
        return data


class LogEntryOut(serializers.Serializer):
    id = serializers.IntegerField(help_text="the run event it is, or follows")
    at = serializers.CharField()
    level = serializers.CharField()
    step = serializers.CharField()
    kind = serializers.CharField()
    text = serializers.CharField()


class ApprovalOut(serializers.Serializer):
    """An approval, escalation, governance hold, held start or reply request."""

    id = serializers.IntegerField(source="pk")
    run = serializers.IntegerField(source="run_id")
    workflow = serializers.CharField(source="run.workflow.name")
    step = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    message = serializers.SerializerMethodField()
    options = serializers.ListField(child=serializers.CharField())
    approvers = serializers.ListField(child=serializers.CharField(), help_text="groups that may decide; "
                                                                              "empty: Approvers")
    attempt = serializers.IntegerField()
    iteration = serializers.IntegerField()
    output = serializers.SerializerMethodField(help_text="a reply request's: the output of the iteration it follows")
    requested_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    decision = serializers.CharField(allow_null=True)
    decided_by = serializers.SerializerMethodField()
    decided_at = serializers.DateTimeField(allow_null=True)
    comment = serializers.CharField()
    reply = serializers.SerializerMethodField()

    def get_message(self, approval) -> str:
        return _hide(approval.run, approval.message)

    def get_output(self, approval) -> str:
        return _hide(approval.run, approval.output)

    def get_reply(self, approval) -> str:
        return _hide(approval.run, approval.reply)

    def get_decided_by(self, approval) -> str | None:
        return approval.decided_by.get_username() if approval.decided_by_id else None


class ReportArtifactsOut(serializers.Serializer):
    kept = serializers.ListField(child=serializers.DictField(), help_text="{path, size, sha256, attempt}")
    refused = serializers.ListField(child=serializers.DictField(), help_text="{path, reason, attempt}")


class ReportStepOut(serializers.Serializer):
    """One step of a run's report (spec section 12)."""

    status = serializers.CharField()
    attempts = serializers.IntegerField()
    outputs = serializers.DictField(child=serializers.JSONField())
    stdout = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_null=True)
    error_code = serializers.CharField(allow_null=True)
    iterations = serializers.IntegerField()
    history = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="a loop step's calls in order (ask_iter_1, review, ...)")
    artifacts = ReportArtifactsOut(required=False, help_text="a step that keeps artifacts: what it kept and had "
                                                             "refused")


class ReportApprovalOut(serializers.Serializer):
    step = serializers.CharField(help_text="empty for a held run's start")
    kind = serializers.CharField()
    status = serializers.CharField()
    decision = serializers.CharField(allow_null=True)


class RunReportOut(serializers.Serializer):
    """A run's report: the JSON object `python -m engine run --json` prints (spec section 12), which `forge status
    --json` and `forge run --wait --json` print in both modes, every argument that reads as a secret hidden."""

    status = serializers.CharField(help_text="pending, running, completed, failed, cancelled, or paused: only a "
                                             "person can move the run on (a decision or a reply is pending)")
    error = serializers.CharField(allow_null=True)
    error_code = serializers.CharField(allow_null=True)
    layers = serializers.ListField(child=serializers.ListField(child=serializers.CharField()),
                                   help_text="the steps by dependency layer")
    dispatch_order = serializers.ListField(child=serializers.CharField())
    steps = serializers.DictField(child=ReportStepOut(), help_text="by step id, in the workflow's order")
    approvals = ReportApprovalOut(many=True)
    variables = serializers.DictField(child=serializers.JSONField(),
                                      help_text="the document's variables, the arguments and the steps' outputs")
