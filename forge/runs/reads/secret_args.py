"""A run's arguments that read as secrets, kept out of what the console shows of its steps.

The run's header shows such an argument redacted, as the audit trail does (forge/console/run_head.py); a step's
command as rendered, a shell step's values ($FORGE_Vn) and what the step printed can hold the same value, so each
text shown of them has it replaced too.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.secrets import REDACTED, redact_secrets

MIN_LENGTH = 4  # shorter values ("no", "1") would blank ordinary words; they are no secret worth the name


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _hidden(raw: object, shown: object) -> list[str]:
    """The strings of `raw` that redaction replaced in `shown`."""
    if shown == REDACTED and raw != REDACTED:
        return _strings(raw)
    if isinstance(raw, dict) and isinstance(shown, dict):
        return [text for key, item in raw.items() for text in _hidden(item, shown.get(key))]
    if isinstance(raw, list) and isinstance(shown, list) and len(raw) == len(shown):
        return [text for item, seen in zip(raw, shown) for text in _hidden(item, seen)]
    if isinstance(raw, str) and raw != shown:
        return [raw]
    return []


def hider(args: dict | None) -> Callable[[object], object]:
    """A function that returns a text with each secret-reading argument's value (of `args`) replaced by
    [redacted], the longest first so that one containing another is hidden whole."""
    args = args if isinstance(args, dict) else {}
    secrets = sorted({s for s in _hidden(args, redact_secrets(args)) if len(s) >= MIN_LENGTH}, key=len,
                     reverse=True)

    def hide(value):
        """`value` (a text, or the strings in a JSON value: its keys too) with the secrets replaced."""
        if isinstance(value, dict):
            return {hide(key): hide(item) for key, item in value.items()}
        if isinstance(value, list):
            return [hide(item) for item in value]
        if not isinstance(value, str):
            return value
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value

    return hide
