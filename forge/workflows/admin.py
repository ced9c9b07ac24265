from django.contrib import admin

from forge.governance.admin import ConfigurationAdmin
from forge.workflows.models import StepLibraryEntry, Workflow, WorkflowVersion


class VersionInline(admin.TabularInline):
    model = WorkflowVersion
    fields = ("number", "content_hash", "created_at", "created_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    list_display = ("name", "description", "created_at")
    search_fields = ("name",)
    inlines = [VersionInline]


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(admin.ModelAdmin):
    list_display = ("workflow", "number", "content_hash", "created_at")
    readonly_fields = ("workflow", "number", "source", "content_hash", "created_at", "created_by")

    def has_add_permission(self, request):
        return False  # versions are saved through the console or `forge run`, which validate them

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(StepLibraryEntry)
class StepLibraryEntryAdmin(ConfigurationAdmin):
    list_display = ("name", "description", "updated_at")
