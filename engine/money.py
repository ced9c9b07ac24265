"""Money as people read it, in the engine's gate messages and on the console's pages: with the precision it
has, never rounded to cents (a limit of 0.006 is 0.006)."""

from __future__ import annotations

DECIMALS = 8  # costs are floats: past this, digits are float noise (0.1 + 0.2), not money


def money_text(value) -> str:
    """At least 2 decimals, and as many more as the amount has, up to DECIMALS: 5 -> 5.00, 0.006 -> 0.006."""
    text = f"{float(value):.{DECIMALS}f}"
    whole, _, decimals = text.partition(".")
    decimals = decimals.rstrip("0").ljust(2, "0")
    return "0.00" if whole in ("0", "-0") and decimals == "00" else f"{whole}.{decimals}"
