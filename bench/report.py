"""What the benchmarks print besides their tables: progress on stderr, and a figure against its target."""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def verdict(value: float, limit: float) -> str:
    return f"<= {limit:g} ok" if value <= limit else f"<= {limit:g} MISSED"
