from django.contrib import admin

from forge.admin_views import ReadOnlyAdmin
from forge.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "code", "target", "step", "attempt")
    list_filter = ("code",)
    search_fields = ("actor", "code", "target", "step")
    date_hierarchy = "at"

