"""Login throttling: django-axes counts failed logins and refuses a locked-out client; this module gives it
Forge's rules (forge/settings.py points axes' hooks here).

Two limits, over the failures of the cool-off window (a row of failures counts until AXES_COOLOFF_TIME after its
latest failure):
- one account from one address (AXES_FAILURE_LIMIT, from FORGE_LOGIN_FAILURES_PER_ACCOUNT) locks that account
  from that address only, so nobody can lock a person out from elsewhere;
- one address, whatever the accounts (FORGE_LOGIN_FAILURES_PER_ADDRESS) locks the address.
While locked, `authenticate()` refuses before any password is checked and nothing more is counted, so a lockout
ends when the page said it would. A successful login forgets only that account's failures from that address:
other accounts' failures keep counting against the address, or an attacker could log into an account of their
own between guesses to start the address's count again.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from forge.audit import codes
from forge.audit.services import audit

# django.contrib.auth's longest user name; axes' column holds 255, and a longer value would fail the insert.
USERNAME_MAX = 150
ACCOUNT, ADDRESS = "account", "address"


@dataclass(frozen=True)
class Standing:
    """What the failures of the cool-off window say about one user name from one address."""

    account_failures: int
    address_failures: int
    account_until: datetime | None  # set while the account is locked from the address
    address_until: datetime | None  # set while the address is locked

    @property
    def limits(self) -> tuple[str, ...]:
        """The limits reached: ACCOUNT, ADDRESS, both or none."""
        return tuple(name for name, until in ((ACCOUNT, self.account_until), (ADDRESS, self.address_until)) if until)

    @property
    def until(self) -> datetime | None:
        """When logins of the user name from the address are taken again (None: they are now)."""
        return max((t for t in (self.account_until, self.address_until) if t), default=None)


def standing(address: str | None, username: str | None, now: datetime) -> Standing:
    window = get_cool_off()
    # After, not at, the window's start: a lockout ends at the very time its page gives.
    rows = list(AccessAttempt.objects.filter(ip_address=address, attempt_time__gt=now - window)
                .values_list("username", "failures_since_start", "attempt_time"))
    mine = [(n, at) for name, n, at in rows if name == username]
    every = [(n, at) for _, n, at in rows]
    return Standing(account_failures=sum(n for n, _ in mine), address_failures=sum(n for n, _ in every),
                    account_until=_until(mine, settings.AXES_FAILURE_LIMIT, window),
                    address_until=_until(every, settings.FORGE_LOGIN_FAILURES_PER_ADDRESS, window))


def standing_of(request, credentials: dict | None = None) -> Standing:
    """The standing of the user name a login request tries, from its address, at its time."""
    return standing(request.axes_ip_address, get_client_username(request, credentials), request.axes_attempt_time)


def _until(rows: list[tuple[int, datetime]], limit: int, window: timedelta) -> datetime | None:
    """When the counted failures fall below `limit`: each row stops counting `window` after its latest failure."""
    total = sum(n for n, _ in rows)
    if total < limit:
        return None
    for n, at in sorted(rows, key=lambda row: row[1]):
        total -= n
        if total < limit:
            return at + window
    return None


def normal_address(value: str | None) -> str | None:
    """`value` as an IP address in its one normal spelling, or None when it is not one."""
    try:
        return str(ipaddress.ip_address((value or "").strip().split("%")[0]))
    except ValueError:
        return None


def client_address(request) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the address failures count against. REMOTE_ADDR; behind a proxy
    (FORGE_BEHIND_PROXY), the last address of X-Forwarded-For, the one that proxy added (any before it are the
    client's own word)."""
    if settings.FORGE_BEHIND_PROXY:
        forwarded = normal_address(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[-1])
        if forwarded:
            return forwarded
    return normal_address(request.META.get("REMOTE_ADDR"))


def attempted_username(request, credentials: dict | None) -> str | None:
    """AXES_USERNAME_CALLABLE: the user name tried, as a value the database takes (no NUL, not overlong)."""
    field = get_user_model().USERNAME_FIELD
    name = credentials.get(field) if credentials else getattr(request, "data", request.POST).get(field)
    return None if name is None else normal_username(str(name))


def normal_username(name: str) -> str:
    """`name` as failures are counted under: without NUL (PostgreSQL refuses it), at most USERNAME_MAX long."""
    return name.replace("\x00", "")[:USERNAME_MAX]


class LoginThrottle(AxesDatabaseHandler):
    """AXES_HANDLER: axes' database handler with Forge's two limits; audits each lockout once; keeps nothing
    that was posted."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        """What axes compares with AXES_FAILURE_LIMIT: this account's failures from this address, or at least
        that limit once the address has reached its own."""
        found = standing_of(request, credentials)
        if found.address_until:
            return max(found.account_failures, settings.AXES_FAILURE_LIMIT)
        return found.account_failures

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        if request is None:  # axes logs it; authenticate() without a request never gets this far (the backend)
            return super().user_login_failed(sender, credentials, request, **kwargs)
        for name in ("axes_user_agent", "axes_http_accept", "axes_path_info"):  # PostgreSQL refuses NUL in text
            setattr(request, name, getattr(request, name, "").replace("\x00", ""))
        refused = request.axes_locked_out  # the backend refused it unchecked: the lockout began earlier
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request.axes_locked_out and not refused:
            _audit_lockout(request, credentials)

    def user_logged_in(self, sender, request, user, **kwargs):
        super().user_logged_in(sender, request, user, **kwargs)
        AccessAttempt.objects.filter(username=user.get_username(), ip_address=request.axes_ip_address).delete()

    def post_save_access_attempt(self, instance, **kwargs):
        # axes masks the posted fields it knows (password, username); a password under another name, or the
        # CSRF token, would be kept. Nothing posted is kept, in the transaction axes writes the row in.
        AccessAttempt.objects.filter(pk=instance.pk).update(get_data="", post_data="")


def _audit_lockout(request, credentials: dict | None) -> None:
    """forge.login.locked_out. A user name that is no account is left out: it may be a password typed in the
    wrong field, and the audit trail is read by every Operator."""
    username = get_client_username(request, credentials)
    users = get_user_model()
    known = bool(username) and users.objects.filter(**{users.USERNAME_FIELD: username}).exists()
    found = standing_of(request, credentials)
    where = request.axes_ip_address
    audit(codes.LOGIN_LOCKED_OUT,
          target=f"account:{username}" if known and found.account_until else f"address:{where}",
          detail={"limits": list(found.limits), "account": username if known else None, "address": where,
                  "account_failures": found.account_failures, "address_failures": found.address_failures,
                  "until": found.until.isoformat() if found.until else None, "path": request.axes_path_info})


def lockout_message(limits: tuple[str, ...], until: datetime, now: datetime) -> str:
    """What a locked-out login is told, the console's page and the API's problem alike."""
    who = "for this user name from your address" if ACCOUNT in limits else "from your address"
    local = timezone.localtime(until)
    day = "" if local.date() == timezone.localtime(now).date() else f"{local:%Y-%m-%d} "
    minutes = max(1, math.ceil((until - now).total_seconds() / 60))
    return (f"Too many failed log-ins {who}. Try again after {day}{local:%H:%M} {local:%Z} "
            f"(in {minutes} minute{'s' if minutes != 1 else ''}), or ask an administrator to lift the lockout.")
