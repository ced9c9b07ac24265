"""`forge lockouts` and `forge unlock`: the parsers and handlers the `forge` management command hooks in. They
act as its --user (None: the system), through the selector and the service."""

from __future__ import annotations

import json

from django.utils import timezone

from engine.terminal import EXIT_INVALID, EXIT_OK
from forge.accounts.selectors import failed_logins
from forge.accounts.services import LockoutRejected, lockout_lift

COMMANDS = ("lockouts", "unlock")


def add_parsers(sub) -> None:
    """Add the lockout commands to the `forge` command's subparsers."""
    listing = sub.add_parser("lockouts", help="failed logins still counted, and the lockouts they cause")
    listing.add_argument("--json", action="store_true")
    unlock = sub.add_parser("unlock", help="lift a login lockout: forget the failed logins of an account, an "
                                           "address, or an account from an address")
    unlock.add_argument("--account", metavar="NAME", help="the user name tried")
    unlock.add_argument("--address", metavar="IP", help="the address the logins came from")


def handle(command, options) -> int:
    """Carry out a lockout command for the `forge` management command `command` (its user and streams)."""
    if options["action"] == "lockouts":
        return _list(command, options)
    try:
        forgotten = lockout_lift(user=command.user, username=options["account"], address=options["address"])
    except LockoutRejected as exc:
        command.stderr.write(f"forge: {exc}")
        return EXIT_INVALID
    command.stdout.write(f"forgot {forgotten} failed logins; the lockouts they caused are lifted")
    return EXIT_OK


def _list(command, options) -> int:
    rows = failed_logins(user=command.user, now=timezone.now())
    if options["json"]:
        command.stdout.write(json.dumps(rows, ensure_ascii=False))
        return EXIT_OK
    if not rows:
        command.stdout.write("no failed logins")
    for row in rows:
        locked = (f"locked until {row['locked_until'][:16].replace('T', ' ')} UTC ({', '.join(row['limits'])})"
                  if row["locked_until"] else "not locked")
        command.stdout.write(f"{row['account'] or '-':<24} {row['address'] or '-':<40} {row['failures']:>5} "
                             f"failures, last {row['last_failure'][:16].replace('T', ' ')} UTC, {locked}")
    return EXIT_OK
