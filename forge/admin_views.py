"""What admin pages of records written only by the runtime share."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that change only through services and the runtime: admins look, never edit."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
