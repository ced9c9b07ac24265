from django.contrib import admin

from forge.admin_views import ReadOnlyAdmin
from forge.runs.models import Approval, Run, StepResult


class StepInline(admin.TabularInline):
    model = StepResult
    fields = ("step", "status", "wait", "attempt", "error_code", "error", "started_at", "finished_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("id", "workflow", "version", "status", "error_code", "restart_count", "started_by", "created_at")
    list_filter = ("status", "workflow")
    inlines = [StepInline]


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ("run", "step", "kind", "iteration", "status", "decision", "decided_by", "requested_at")
    list_filter = ("status", "kind")
