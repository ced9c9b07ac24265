"""Lifting a login lockout: forgetting the failed logins that caused it, permission checked and audited."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Sum

from forge.accounts.models import LoginFailure
from forge.accounts.throttle import normal_address, normal_username
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import Forbidden, Invalid, NotFound

LIFT_PERMISSION = "forge_accounts.delete_loginfailure"  # the Admins group holds it (forge/accounts/apps.py)


class LockoutRejected(Invalid):
    """A lift that cannot be carried out as asked; nothing changed."""


class LockoutNotFound(NotFound, LockoutRejected):
    """No failed login matches what was named (another Admin may have lifted it meanwhile)."""


def lockout_lift(*, user, username: str | None = None, address: str | None = None) -> int:
    """Forget the failed logins of `username` from `address`, ending the lockouts they caused; returns how many.

    Either alone widens it: `username` alone, its failures from every address; `address` alone, every
    account's failures from that address (which lifts the address's own lockout too). `user` None is the system
    itself (the `forge` command on the server).

    Raises:
        Forbidden: `user` may not lift lockouts.
        LockoutRejected: neither is given, the address is not one, or no failed login matches.
    """
    if user is not None and not user.has_perm(LIFT_PERMISSION):
        raise Forbidden("you may not lift login lockouts")
    if not username and not address:
        raise LockoutRejected("name an account, an address or both")
    filters, what = {}, []
    if username:
        filters["username"] = normal_username(username)
        what.append(f"account {filters['username']!r}")
    if address:
        filters["ip_address"] = normal_address(address)
        if filters["ip_address"] is None:
            raise LockoutRejected(f"{address[:60]!r} is not an IP address")
        what.append(f"address {filters['ip_address']}")
    with transaction.atomic():
        rows = LoginFailure.objects.select_for_update().filter(**filters)
        failures = rows.aggregate(n=Sum("failures_since_start"))["n"] or 0
        if not failures:
            raise LockoutNotFound(f"no failed logins are recorded for {' from '.join(what)}")
        rows.delete()
        audit(codes.LOGIN_LOCKOUT_LIFTED, user=user,
              target=f"account:{filters['username']}" if username else f"address:{filters['ip_address']}",
              detail={"account": filters.get("username"), "address": filters.get("ip_address"),
                      "failures": failures})
    return failures
