"""People and failed logins in Django admin. Admins see failed logins and lift lockouts through the audited service,
and nothing else; a person's password page saves in one transaction with its audit event.

django-axes' own admin pages are off (AXES_ENABLE_ADMIN): their delete would forget failures unaudited.
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import router, transaction
from django.utils import timezone

from forge.accounts.models import LoginFailure
from forge.accounts.services import LIFT_PERMISSION, LockoutRejected, lockout_lift
from forge.accounts.throttle import standing

SHOWN = ("username", "ip_address", "failures_since_start", "attempt_time", "path_info", "user_agent")


@admin.register(LoginFailure)
class LoginFailureAdmin(admin.ModelAdmin):
    list_display = ("username", "ip_address", "failures_since_start", "attempt_time", "locked_until")
    search_fields = ("username", "ip_address")
    date_hierarchy = "attempt_time"
    fields = SHOWN
    readonly_fields = SHOWN
    actions = ["lift"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # lifting is the only way to forget failures: the `lift` action, through the service

    def has_lift_permission(self, request):
        return request.user.has_perm(LIFT_PERMISSION)

    @admin.display(description="locked until")
    def locked_until(self, obj):
        until = standing(obj.ip_address, obj.username, timezone.now()).until
        return f"{timezone.localtime(until):%Y-%m-%d %H:%M %Z}" if until else "-"

    @admin.action(description="Lift the lockout: forget these failed logins", permissions=["lift"])
    def lift(self, request, queryset):
        pairs = sorted(set(queryset.values_list("username", "ip_address")), key=str)
        try:
            with transaction.atomic():
                forgotten = sum(lockout_lift(user=request.user, username=username, address=address)
                                for username, address in pairs)
        except LockoutRejected as exc:  # another admin lifted them meanwhile
            self.message_user(request, f"Nothing was lifted: {exc}.", messages.ERROR)
            return
        self.message_user(request, f"Forgot {forgotten} failed logins; the lockouts they caused are lifted.")


class PersonAdmin(UserAdmin):
    """Django's own, with its password page in one transaction like its other pages, so the password change and
    its audit event (forge/accounts/audit_trail.py) are kept or lost together."""

    def user_change_password(self, request, id, form_url=""):
        with transaction.atomic(using=router.db_for_write(self.model)):
            return super().user_change_password(request, id, form_url)


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), PersonAdmin)
