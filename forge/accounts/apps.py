from django.apps import AppConfig
from django.db.models.signals import post_migrate

from forge.accounts.roles import ADMINS

# What the Admins group may edit in Django admin: app label -> models.
ADMIN_EDITS = {
    "forge_governance": ("agent", "gateway", "budgetenvelope", "policy"),
    "forge_workflows": ("steplibraryentry",),
}
# What it may look at and delete but never add or edit: failed logins (deleting them lifts a lockout).
ADMIN_LIFTS = {"forge_accounts": ("loginfailure",)}


def grant_admin_permissions(sender, using="default", **kwargs):
    """Permissions exist only after every migration ran, so they are granted here rather than in one."""
    from django.contrib.auth.models import Group, Permission

    admins = Group.objects.using(using).filter(name=ADMINS).first()
    if admins is None:
        return
    wanted = Permission.objects.using(using).filter(
        content_type__app_label__in=ADMIN_EDITS,
        content_type__model__in=[model for models in ADMIN_EDITS.values() for model in models])
    admins.permissions.add(*[p for p in wanted if p.content_type.model in ADMIN_EDITS[p.content_type.app_label]])
    lifts = Permission.objects.using(using).filter(
        content_type__app_label__in=ADMIN_LIFTS,
        codename__in=[f"{verb}_{model}" for models in ADMIN_LIFTS.values() for model in models
                      for verb in ("view", "delete")])
    admins.permissions.add(*[p for p in lifts if p.content_type.model in ADMIN_LIFTS[p.content_type.app_label]])


class AccountsConfig(AppConfig):
    name = "forge.accounts"
    label = "forge_accounts"
    verbose_name = "People"

    def ready(self):
        post_migrate.connect(grant_admin_permissions, dispatch_uid="forge.accounts.grant_admin_permissions")
        from forge.accounts import audit_trail

        audit_trail.connect()
