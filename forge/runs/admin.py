from django.contrib import admin

from forge.runs.models import Approval, Run, StepResult


class StepInline(admin.TabularInline):
    model = StepResult
    fields = ("step", "status", "wait", "attempt", "error_code", "error", "started_at", "finished_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


class ReadOnly(admin.ModelAdmin):
    """Runs change only through the runtime and its services."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(ReadOnly):
    list_display = ("id", "workflow", "version", "status", "error_code", "restart_count", "started_by", "created_at")
    list_filter = ("status", "workflow")
    inlines = [StepInline]


@admin.register(Approval)
class ApprovalAdmin(ReadOnly):
    list_display = ("run", "step", "kind", "status", "decision", "decided_by", "requested_at")
    list_filter = ("status", "kind")
