"""Which environment variables an agent may read: only those named with the agents' secret prefix.

A worker's environment also holds the server's own secrets (FORGE_SECRET_KEY,
DATABASE_URL, ...); an agent's configuration is edited by admins who are not
the server's operators, so it may only name variables the operator put there
for agents.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

SECRET_PREFIX = "FORGE_AGENT_SECRET_"
_NAME = re.compile(r"FORGE_AGENT_SECRET_[A-Z0-9_]{1,100}")


def secret_name_problem(name: object) -> str | None:
    """Why `name` may not be read by an agent, or None when it may."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return (f"{str(name)[:120]!r} is not an agent secret: agents may only read environment variables "
                f"named {SECRET_PREFIX}<NAME> (capital letters, digits and _)")
    return None


def read_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of an agent secret (None when unset).

    Raises:
        ValueError: `name` is not an agent secret's name.
    """
    problem = secret_name_problem(name)
    if problem:
        raise ValueError(problem)
    return (os.environ if environ is None else environ).get(name)
