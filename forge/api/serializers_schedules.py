"""How the API reads and shows schedules, the kill switch and the audit trail. A schedule is answered as
`forge schedules --json` prints it (forge/schedules/selectors.schedule_row), its arguments redacted as the audit
trail shows them; an audit event with its `shown_detail`, never the detail as stored."""

from __future__ import annotations

from rest_framework import serializers

from engine.secrets import redact_secrets
from forge.api.base import StrictSerializer
from forge.api.fields import Flag, KeptJson, Words
from forge.schedules.models import Schedule
from forge.schedules.selectors import schedule_row
from forge.schedules.services import MAX_APPROVERS
from forge.workflows.models import Workflow

MAX_REASON = 2000  # as the dashboard's kill switch form (forge/console/views/actions.MAX_TEXT)
MAX_CRON_TYPED = 1000  # longer is refused here; up to it, the service says why in its own words
GROUP_NAME = 150  # auth.Group.name


class ScheduleIn(StrictSerializer):
    """What schedule_add takes; a change takes the same fields but `enabled` (pause and resume do that), each
    optional. Workflow, cron, time zone, overlap and approvers are checked by the service (422, naming the field)."""

    workflow = Words(max_length=Workflow._meta.get_field("name").max_length,
                     help_text="the workflow's name; each due time starts its latest version")
    cron = Words(max_length=MAX_CRON_TYPED, help_text=Schedule._meta.get_field("cron").help_text)
    timezone = Words(max_length=64, required=False, default="UTC",
                     help_text=Schedule._meta.get_field("timezone").help_text)
    args = KeptJson(required=False, default=dict, help_text="the run's arguments, a JSON object of name: value")
    overlap = Words(max_length=32, required=False, default=Schedule.SKIP,
                    help_text="skip, queue_one or cancel_running: what a due time does while a run it started is "
                              "in flight")
    enabled = Flag(required=False, default=True, help_text="false: added paused")
    require_approval = Flag(required=False, default=False,
                            help_text="each due time starts its run held before its first step, for the approvers")
    approvers = serializers.ListField(child=Words(max_length=GROUP_NAME), max_length=MAX_APPROVERS * 5,
                                      required=False, default=list,
                                      help_text="the groups whose members may approve its runs; empty: Approvers")


class ScheduleChangeIn(ScheduleIn):
    enabled = None  # pause and resume


class ScheduleOut(serializers.Serializer):
    id = serializers.IntegerField()
    workflow = serializers.CharField()
    cron = serializers.CharField()
    timezone = serializers.CharField()
    args = serializers.JSONField(help_text="an argument that reads as a secret redacted")
    enabled = serializers.BooleanField()
    overlap = serializers.CharField()
    require_approval = serializers.BooleanField()
    approvers = serializers.ListField(child=serializers.CharField())
    owner = serializers.CharField(allow_null=True, help_text="whose permissions its runs start with")
    next_fire_at = serializers.DateTimeField(allow_null=True)
    queued_due_at = serializers.DateTimeField(allow_null=True)
    last_dispatch_status = serializers.CharField(allow_null=True)
    last_dispatch_at = serializers.DateTimeField(allow_null=True)
    last_dispatch_detail = serializers.CharField()
    last_run = serializers.IntegerField(allow_null=True)

    def to_representation(self, schedule):
        row = schedule_row(schedule)
        return {**row, "args": redact_secrets(row["args"])}


class KillSwitchIn(StrictSerializer):
    engaged = Flag(help_text="true: no schedule starts a run; false: schedules fire again from their next time")
    reason = Words(max_length=MAX_REASON, help_text="why, for the audit trail and the dashboard")


class KillSwitchOut(serializers.Serializer):
    engaged = serializers.BooleanField()
    reason = serializers.CharField()
    changed_by = serializers.SerializerMethodField()
    changed_at = serializers.DateTimeField(allow_null=True)

    def get_changed_by(self, switch) -> str | None:
        return switch.changed_by.get_username() if switch.changed_by_id else None


class AuditEventOut(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    code = serializers.CharField(help_text="what happened, e.g. forge.run.started (forge/audit/codes.py)")
    actor = serializers.CharField(help_text="a username, or system")
    run = serializers.IntegerField(source="run_id", allow_null=True)
    step = serializers.CharField()
    attempt = serializers.IntegerField(allow_null=True)
    target = serializers.CharField()
    detail = serializers.JSONField(source="shown_detail", help_text="what may be a secret redacted")
    token = serializers.IntegerField(source="token_id", allow_null=True,
                                     help_text="the API token the change came through")
