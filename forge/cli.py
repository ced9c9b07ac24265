"""The `forge` console script: `python manage.py forge` without the manage.py."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["forge", "forge", *(sys.argv[1:] if argv is None else argv)])
