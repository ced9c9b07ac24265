"""Failed logins as Django admin shows them: django-axes' rows, which Admins may look at and forget, never edit."""

from axes.models import AccessAttempt


class LoginFailure(AccessAttempt):
    """Failed logins of one user name from one address (and browser), counted by the login throttle
    (forge/accounts/throttle.py). Forgetting them lifts the lockout they caused (forge/accounts/services.py)."""

    class Meta:
        proxy = True
        verbose_name = "failed login"
        verbose_name_plural = "failed logins"
