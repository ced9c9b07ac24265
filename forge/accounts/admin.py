"""People, failed logins and API tokens in Django admin. Admins see failed logins and lift lockouts through the audited
service, and nothing else; a person's password page saves in one transaction with its audit event. Tokens,
service accounts and the token policy change only through forge/accounts/tokens.py.

django-axes' own admin pages are off (AXES_ENABLE_ADMIN): their delete would forget failures unaudited.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import router, transaction
from django.utils import timezone

from forge.accounts.models import ApiToken, LoginFailure, ServiceAccount, TokenPolicy
from forge.accounts.services import LIFT_PERMISSION, LockoutRejected, lockout_lift
from forge.accounts.throttle import standing
from forge.accounts.tokens import (
    MAX_POLICY_DAYS, may_manage_accounts, service_account_create, token_policy_set, token_revoke)
from forge.errors import ForgeError

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


class AdminsOnly(admin.ModelAdmin):
    """Pages for the Admins group (as roles say, not model permissions), changed only through the tokens'
    services, which check and audit."""

    def has_module_permission(self, request):
        return may_manage_accounts(request.user)

    def has_view_permission(self, request, obj=None):
        return may_manage_accounts(request.user)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(AdminsOnly):
    """Every token, never its secret (nor its digest); revoking is the one change, through the service."""

    list_display = ("name", "prefix", "user", "scope_list", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    fields = ("name", "prefix", "user", "scopes", "created_by", "created_at", "expires_at", "last_used_at",
              "revoked_at")
    readonly_fields = fields
    list_select_related = ("user",)
    actions = ["revoke"]

    def has_revoke_permission(self, request):
        return may_manage_accounts(request.user)

    @admin.display(description="scopes")
    def scope_list(self, obj):
        return ", ".join(obj.scopes)

    @admin.action(description="Revoke these tokens", permissions=["revoke"])
    def revoke(self, request, queryset):
        live = list(queryset.filter(revoked_at=None).select_related("user"))
        try:
            with transaction.atomic():
                for token in live:
                    token_revoke(user=request.user, token=token)
        except ForgeError as exc:  # another Admin revoked one meanwhile
            self.message_user(request, f"Nothing was revoked: {exc.message}.", messages.ERROR)
            return
        skipped = queryset.count() - len(live)
        self.message_user(request, f"Revoked {len(live)} token(s)" + (
            f"; {skipped} were revoked already." if skipped else "."))


class ServiceAccountForm(forms.ModelForm):
    """The account's name and description; the service makes it as the form is checked, so that what it
    refuses is an error on the form (the admin's add page runs in one transaction)."""

    username = forms.CharField(max_length=150, help_text="letters, digits and @ . + - _ only")

    class Meta:
        model = ServiceAccount
        fields = ("username", "description")

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.made = service_account_create(user=self.acting, username=cleaned["username"],
                                               description=cleaned.get("description", ""))
        except ForgeError as exc:
            field = exc.extra.get("field")
            self.add_error(field if field in self.fields else None, f"{exc.message[:1].upper()}{exc.message[1:]}.")
        return cleaned


@admin.register(ServiceAccount)
class ServiceAccountAdmin(AdminsOnly):
    """Service accounts: made here or through the API; their groups are set on their user's page, their tokens
    made through the API (`POST /api/v1/service-accounts/{username}/tokens`)."""

    list_display = ("user", "description", "created_by", "created_at")
    search_fields = ("user__username", "description")
    form = ServiceAccountForm

    def has_add_permission(self, request):
        return may_manage_accounts(request.user)

    def get_readonly_fields(self, request, obj=None):
        return ("user", "description", "created_by", "created_at") if obj else ()

    def get_fields(self, request, obj=None):
        return ("user", "description", "created_by", "created_at") if obj else ("username", "description")

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.acting = request.user
        return form

    def save_model(self, request, obj, form, change):
        made = form.made.service_account  # made, checked and audited as the form was checked
        obj.pk, obj.user, obj.created_at = made.pk, made.user, made.created_at


class TokenPolicyForm(forms.ModelForm):
    max_days = forms.IntegerField(min_value=1, max_value=MAX_POLICY_DAYS,
                                  help_text=f"the longest a new token may live, 1 to {MAX_POLICY_DAYS} days; tokens "
                                            "made before keep theirs")

    class Meta:
        model = TokenPolicy
        fields = ("max_days",)


@admin.register(TokenPolicy)
class TokenPolicyAdmin(AdminsOnly):
    """The one row of token rules, set through the audited service."""

    form = TokenPolicyForm
    list_display = ("__str__",)

    def has_add_permission(self, request):
        return may_manage_accounts(request.user) and not TokenPolicy.objects.exists()

    def has_change_permission(self, request, obj=None):
        return may_manage_accounts(request.user)

    def save_model(self, request, obj, form, change):
        policy = token_policy_set(user=request.user, max_days=form.cleaned_data["max_days"])
        obj.pk = policy.pk
