import json

from django.contrib import admin

from forge.admin_views import ReadOnlyAdmin
from forge.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "code", "target", "step", "attempt")
    list_filter = ("code",)
    search_fields = ("actor", "code", "target", "step")  # never the detail: a search would find a redacted value
    date_hierarchy = "at"
    exclude = ("detail",)
    readonly_fields = ("detail_shown",)

    @admin.display(description="detail")
    def detail_shown(self, event: AuditEvent) -> str:
        return json.dumps(event.shown_detail, indent=1, sort_keys=True)
