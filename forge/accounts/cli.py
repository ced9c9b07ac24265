"""`forge lockouts` and `forge unlock`, local mode only (the API has no lockout operation): the handlers the `forge`
management command hooks in (their arguments are forge/cli_commands/parser.py's). They act as its --user (None:
the system), through the selector and the service."""

from __future__ import annotations

import json

from django.utils import timezone

from engine.terminal import EXIT_OK
from forge.accounts.selectors import failed_logins
from forge.accounts.services import lockout_lift
from forge.cli_commands.parser import ACCOUNTS
from forge.errors import ForgeError, exit_code_of

COMMANDS = ACCOUNTS


def handle(command, options) -> int:
    """Carry out a lockout command for the `forge` management command `command` (its user and streams)."""
    if options["action"] == "lockouts":
        return _list(command, options)
    try:
        forgotten = lockout_lift(user=command.user, username=options["account"], address=options["address"])
    except ForgeError as exc:  # LockoutRejected, Forbidden
        command.stderr.write(f"forge: {exc}")
        return exit_code_of(exc)
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
