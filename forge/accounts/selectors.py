"""Reading failed logins: what the `forge lockouts` command lists."""

from __future__ import annotations

from datetime import datetime

from axes.helpers import get_cool_off
from django.db.models import Max, Sum

from forge.accounts.models import LoginFailure
from forge.accounts.throttle import standing
from forge.errors import Forbidden

VIEW_PERMISSION = "forge_accounts.view_loginfailure"


def failed_logins(*, user, now: datetime) -> list[dict]:
    """The failed logins still counted, one row per user name and address, most recent first, each with when
    its lockout ends (None: not locked). `user` None is the system itself."""
    if user is not None and not user.has_perm(VIEW_PERMISSION):
        raise Forbidden("you may not see failed logins")
    pairs = (LoginFailure.objects.filter(attempt_time__gt=now - get_cool_off())
             .values("username", "ip_address").annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
             .order_by("-last", "username", "ip_address"))
    rows = []
    for pair in pairs:
        found = standing(pair["ip_address"], pair["username"], now)
        rows.append({"account": pair["username"], "address": pair["ip_address"], "failures": pair["failures"],
                     "last_failure": pair["last"].isoformat(), "limits": list(found.limits),
                     "locked_until": found.until.isoformat() if found.until else None})
    return rows
