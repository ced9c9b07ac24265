"""What this process's live sockets did, counted for the operator (GET /live/status/, Admins) and the tests.

`polling_only` counts sockets that could not join a group of the channel layer (Redis unreachable, or its
pool exhausted) and so see changes only every FORGE_LIVE_POLL_S; the first is also logged as a warning.
"""

from __future__ import annotations

from collections import Counter

counts: Counter[str] = Counter()  # open, opened, polling_only, closed_for_session


def snapshot() -> dict[str, int]:
    return {name: counts[name] for name in ("open", "opened", "polling_only", "closed_for_session")}
