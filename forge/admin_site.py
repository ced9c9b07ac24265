"""Django admin for everyone in the Admins group, not only staff accounts: the console's Admin link leads there."""

from django.contrib.admin import AdminSite
from django.contrib.admin.apps import AdminConfig

from forge.accounts.roles import may_use_admin


class ForgeAdminSite(AdminSite):
    def has_permission(self, request):
        return may_use_admin(request.user)


class ForgeAdminConfig(AdminConfig):
    default_site = "forge.admin_site.ForgeAdminSite"
