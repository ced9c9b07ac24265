"""Finding the processes a test started, however they left its process group, by scanning /proc (Linux)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def running(*, session: int | None = None, marker: str = "") -> dict[int, str]:
    """Live processes (zombies are dead) of `session`, or whose command line holds `marker`: pid -> command line.

    A session holds a started process's whole tree, whatever process groups it made, unless one of them started a
    session of its own (a sandbox does): the marker finds those.
    """
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile
        state, sid = fields[0], int(fields[3])
        if state != "Z" and (sid == session or (marker and marker in command)):
            found[int(entry.name)] = command
    found.pop(os.getpid(), None)
    return found


def kill_all(*, session: int | None = None, marker: str = "") -> None:
    """SIGKILL every process `running` finds: a test leaves none behind, whatever its outcome."""
    for pid in running(session=session, marker=marker):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
