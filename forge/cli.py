"""The `forge` console script: `python manage.py forge` without the manage.py."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(["forge", "forge", *(sys.argv[1:] if argv is None else argv)])
    except BrokenPipeError:
        # The reader went away (`forge schedules | head -1`): stop quietly, as other Unix tools do. Python
        # would report the same error again flushing stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a command a closed pipe stopped
