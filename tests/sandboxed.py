"""Finding a shell step's processes from outside its sandbox: inside, pids are those of its own PID namespace,
so a step cannot tell the test its pids. Its commands sleep for a duration no other process uses instead."""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path


def marker() -> str:
    """A `sleep` duration (seconds) that names one test's processes."""
    return f"{3000 + secrets.randbelow(600)}.{secrets.randbelow(10**6):06d}"


def _live(matches) -> list[int]:
    """The live (not zombie) processes, other than this one, whose command line and session `matches`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state, _, _, session = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[:4]
        except (OSError, ValueError):
            continue
        if matches(cmdline, int(session)) and state != "Z":
            found.append(int(proc.name))
    return found


def pids_sleeping(marker: str) -> list[int]:
    """The processes with `marker` as one of their arguments (`sleep MARKER`)."""
    return _live(lambda cmdline, _: marker.encode() in cmdline.split(b"\0"))


def pids_mentioning(marker: str) -> list[int]:
    """The processes whose command line contains `marker` anywhere (a step's `sh -c` text)."""
    return _live(lambda cmdline, _: marker.encode() in cmdline)


def pids_in_session(session: int) -> list[int]:
    """The processes of a session: everything a process started with `start_new_session` started, whatever
    process groups they made, but a sandbox's commands, which have a session of their own (find those by
    their marker)."""
    return _live(lambda _, sid: sid == session)


def kill_all(pids: list[int]) -> None:
    """SIGKILL each: a test never leaves a step's processes behind, whatever its outcome."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
