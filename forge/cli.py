"""The `forge` console script: `python manage.py forge` without the manage.py. With a stored server (`forge login
URL`, or FORGE_URL) it talks to the server's API without setting Django up, so it runs on any machine."""

from __future__ import annotations

import os
import sys

from forge.cli_commands.modes import script


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    try:
        code = script(argv)
        if code is None:
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
            from django.core.management import execute_from_command_line

            execute_from_command_line(["forge", "forge", *argv])
        else:
            sys.stdout.flush()
            sys.exit(code)
    except BrokenPipeError:
        # The reader went away (`forge schedules | head -1`): stop quietly, as other Unix tools do. Python
        # would report the same error again flushing stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a command a closed pipe stopped
