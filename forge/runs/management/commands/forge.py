"""`python manage.py forge ...` (and the `forge` console script): runs from the command line.

With a stored server (`forge login URL`, or FORGE_URL and FORGE_TOKEN) every command goes through that server's
API as the person the token belongs to (forge/cli_remote/); without, it runs here, on the server, as --user or
as the installation's admin (forge/cli_commands/local.py). Both print from the API's JSON shapes.

With --json a command prints exactly one JSON object on stdout. `run --wait` exits like `python -m engine run`:
0 completed, 1 failed or cancelled, 3 paused (waiting for a decision or a reply), 2 invalid input; 4 refused
(not signed in, not allowed), 5 the server is unreachable or busy (forge.errors).
"""

from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from engine.terminal import EXIT_INVALID, UsageError
from forge.accounts import cli as accounts_cli
from forge.cli_commands import modes, parser
from forge.cli_commands.local import Local
from forge.cli_commands.waiting import Exit
from forge.errors import ForgeError, exit_code_of
from forge.runs.selectors import is_paused
from forge.schedules import cli as schedules_cli

LOCAL_NOTE = ("forge: no server is stored (forge login URL): acting locally, on this installation, as its admin")


class Command(BaseCommand):
    help = "Run workflows on the cluster, decide approvals, cancel and restart runs."

    def add_arguments(self, parser_):
        parser.add_arguments(parser_)

    def handle(self, *args, **options):
        code = modes.dispatch(options, self.stdout.write, self.stderr.write, local=self._local)
        sys.stdout.flush()
        if code:
            sys.exit(code)

    def _local(self, options) -> int:
        try:
            self.user = self._user(options.get("user"))
            if self.user is None:
                self.stderr.write(LOCAL_NOTE)
            if options["action"] in schedules_cli.COMMANDS:
                return schedules_cli.handle(self, options)
            if options["action"] in accounts_cli.COMMANDS:
                return accounts_cli.handle(self, options)
            local = Local(self.user, self.stdout, self.stderr)
            action = options["action"]
            if action in ("approve", "reject"):
                return local.decide(options, action)
            if action == "decide":
                return local.decide(options, options["decision"])
            return getattr(local, f"do_{action}")(options)
        except Exit as exc:
            return exc.code
        except ForgeError as exc:  # every refusal of the services, Forbidden included
            self.stderr.write(f"forge: {exc}")
            return exit_code_of(exc)
        except UsageError as exc:
            self.stderr.write(f"forge: {exc}")
            return EXIT_INVALID

    def _wait(self, run, decisions, replies, timeout):
        """The local `run --wait` loop as the system, reading `is_paused` from this module when it runs (tests
        drive the wait through here)."""
        local = Local(None, self.stdout, self.stderr, paused=lambda checked: is_paused(checked))
        return local._wait(run, decisions, replies, timeout)

    def _user(self, name: str | None):
        if not name:
            return None
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise UsageError(f"--user: there is no user {name!r}")
        return user
