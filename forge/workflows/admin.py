from django.contrib import admin, messages
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from forge.governance.admin import ConfigurationAdmin
from forge.workflows.admin_add import SHOWN_PROBLEMS, WorkflowAddForm, said
from forge.workflows.models import StepLibraryEntry, Workflow, WorkflowVersion
from forge.workflows.services import workflow_validate, workflow_version_save


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

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = WorkflowAddForm
            kwargs["fields"] = ["source"]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        return [(None, {"fields": ["source"]})] if obj is None else super().get_fieldsets(request, obj)

    def has_change_permission(self, request, obj=None):
        return False  # name and description come from the versions' YAML: a new version changes them

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        # The workflow and its first version, in one transaction, audited (forge.workflow.created).
        version = workflow_version_save(user=request.user, source=form.cleaned_data["source"])
        obj.pk, obj.name = version.workflow.pk, version.workflow.name
        obj._state.adding, obj._state.db = False, version.workflow._state.db
        for warning in form.warnings[:SHOWN_PROBLEMS]:
            self.message_user(request, f"Warning {warning.code}: {said(warning)}", messages.WARNING)


@admin.register(WorkflowVersion)
class WorkflowVersionAdmin(admin.ModelAdmin):
    list_display = ("workflow", "number", "content_hash", "created_at")
    readonly_fields = ("workflow", "number", "source", "warnings", "content_hash", "created_at", "created_by")

    @admin.display(description="warnings")
    def warnings(self, obj):
        """What validation warns about in this version (spec 15's unknown_name, ...), each with its line."""
        if obj is None or obj.pk is None:
            return "-"
        found = workflow_validate(source=obj.source).warnings
        if not found:
            return "none"
        return format_html_join(mark_safe("<br>"), "{}", ((f"{w.code}: {said(w)}",) for w in found))

    def has_add_permission(self, request):
        return False  # versions are saved through the console or `forge run`, which validate them

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(StepLibraryEntry)
class StepLibraryEntryAdmin(ConfigurationAdmin):
    list_display = ("name", "description", "updated_at")
