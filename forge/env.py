"""Reading settings from the environment: small helpers that fail loudly on bad values."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return _number(name, default, int, "a whole number", minimum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return _number(name, default, float, "a number", minimum)


def env_seconds_list(name: str, default: tuple[float, ...]) -> tuple[float, ...]:
    """Comma-separated waits in seconds, each a finite number from 0 to a day; empty: none."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    waits = []
    for item in env_list(name):
        try:
            value = float(item)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={raw!r}: {item!r} is not a number of seconds") from None
        if not 0 <= value <= 86400:  # NaN and infinities fail too
            raise ImproperlyConfigured(f"{name}={raw!r}: {item!r} is not between 0 and 86400 seconds")
        waits.append(value)
    return tuple(waits)


def _number(name: str, default, parse, kind: str, minimum):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind}") from None
    if value != value:  # NaN
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind}")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} is below its minimum {minimum}")
    return value


def env_list(name: str, default: tuple[str, ...] = ()) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str, default: str | None = None) -> str | None:
    """NAME, or the contents of the file named by NAME_FILE (for secrets mounted as files)."""
    value = os.environ.get(name)
    path = os.environ.get(f"{name}_FILE")
    if value and path:
        raise ImproperlyConfigured(f"set {name} or {name}_FILE, not both")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path}: {exc.strerror or exc}") from None
    return value or default
