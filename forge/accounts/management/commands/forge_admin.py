"""Make the first admin account, once, and say how to log in."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from forge.accounts.roles import GROUPS


class Command(BaseCommand):
    help = "Create the admin account on first start (its password is written to FORGE_DATA_DIR/admin-password)."

    def handle(self, *args, **options):
        users = get_user_model()
        path = settings.DATA_DIR / "admin-password"
        if users.objects.filter(is_superuser=True).exists():
            where = f" (password in {path})" if path.exists() else ""
            self.stdout.write(f"Log in as an existing admin{where}.")
            return
        password = secrets.token_urlsafe(12)
        admin = users.objects.create_superuser("admin", password=password)
        admin.groups.add(*Group.objects.filter(name__in=GROUPS))
        path.touch(mode=0o600)
        path.write_text(password + "\n")
        self.stdout.write(f"Created the admin account: user admin, password {password} (also in {path}).")
