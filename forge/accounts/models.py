"""Failed logins as Django admin shows them: django-axes' rows, which Admins may look at and forget, never edit."""

from axes.models import AccessAttempt
from django.conf import settings
from django.db import models
from django.utils import timezone


class LoginFailure(AccessAttempt):
    """Failed logins of one user name from one address (and browser), counted by the login throttle
    (forge/accounts/throttle.py). Forgetting them lifts the lockout they caused (forge/accounts/services.py)."""

    class Meta:
        proxy = True
        verbose_name = "failed login"
        verbose_name_plural = "failed logins"


class ApiToken(models.Model):
    """A personal access token: `forge_pat_` and 43 random characters, shown once and kept as its SHA-256 (the
    secret is random, so a fast hash is as safe as a slow one). It acts as its owner, within its scopes and the
    owner's current groups, until it expires or is revoked (forge/accounts/tokens.py)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. 'CI deploys'")
    prefix = models.CharField(max_length=20, help_text="its first characters, shown in lists to tell tokens apart")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the whole token, in hex")
    scopes = models.JSONField(default=list, help_text="what it may do, e.g. ['runs:read', 'runs:write']")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", help_text="who made it: its owner, or an Admin for a service account")
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"


class ServiceAccount(models.Model):
    """A user without a password for scripts and bots: it signs in with tokens only, which Admins make."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="service_account")
    description = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.user.get_username()


class TokenPolicy(models.Model):
    """The installation's one row of token rules, set by Admins: the longest life a token may be given."""

    max_days = models.PositiveIntegerField(default=365, help_text="the longest a new token may live, in days")

    class Meta:
        verbose_name_plural = "token policy"

    def __str__(self) -> str:
        return f"tokens live at most {self.max_days} days"
