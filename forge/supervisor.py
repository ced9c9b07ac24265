"""`bin/serve`'s last part: runs the web server and the cluster together, and stops both within 10 s.

Each child leads a process group of its own, so Ctrl-C (SIGINT to the terminal's foreground group) and a signal
to bin/serve's group reach this process only, and it stops the children itself: SIGTERM to each (daphne closes
its connections; the cluster's parent stops its Sentinel, which hands running steps back, docs/runtime.md),
then SIGKILL to any child's process group still running STOP_S later, said on stderr. A child that exits on its
own stops the other the same way. It imports nothing of Django: it only starts and stops processes.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STOP_S = 8.0  # from SIGTERM to SIGKILL: with the kill itself, everything is gone within 10 s of the signal
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def say(text: str) -> None:
    print(f"forge: {text}", file=sys.stderr, flush=True)


def serving(port: str) -> dict[str, list[str]]:
    """bin/serve's children, by the name the log gives them."""
    return {"the cluster (qcluster)": [sys.executable, str(ROOT / "manage.py"), "qcluster"],
            "the web server (daphne)": web_server(port)}


def web_server(port: str) -> list[str]:
    """daphne on 127.0.0.1:`port`. A websocket's handshake may wait 30 s for its accept, not daphne's 5: a burst of
    sockets opened together (a few hundred pages) queues behind the others' first reads rather than being dropped."""
    return [sys.executable, "-m", "daphne", "--websocket_connect_timeout", "30", "-b", "127.0.0.1", "-p", port,
            "forge.asgi:application"]


def _noted(signum, frame) -> None:
    """A Python handler, so the signal's number reaches the wake-up pipe (and children start with the default)."""


def supervise(commands: dict[str, list[str]], *, ready: str = "", stop_s: float = STOP_S) -> int:
    """Run `commands` (name: argv) until a stop signal arrives or one of them exits, then stop them all.

    Returns:
        0 when a signal stopped them; 1 when one exited on its own or could not start.
    """
    wake, woken = os.pipe()
    os.set_blocking(woken, False)
    signal.set_wakeup_fd(woken)  # a signal that arrives before the loop waits is still there when it does
    for signum in (*STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(signum, _noted)
    running: dict[str, subprocess.Popen] = {}
    reason, code = "", 0
    for name, argv in commands.items():
        try:
            running[name] = subprocess.Popen(argv, cwd=ROOT, process_group=0)
        except OSError as exc:
            reason, code = f"{name} could not start: {exc}", 1
            break
    if not reason and ready:
        print(ready, flush=True)
    while not reason:
        select.select([wake], [], [])
        received = set(os.read(wake, 512))
        if stops := sorted(received & STOP_SIGNALS):
            reason = f"{signal.Signals(stops[0]).name} received"
        elif exited := [(name, process) for name, process in running.items() if process.poll() is not None]:
            reason, code = f"{exited[0][0]} exited with code {exited[0][1].returncode}", 1
    say(f"stopping: {reason}")
    stop(running, stop_s)
    return code


def stop(running: dict[str, subprocess.Popen], stop_s: float) -> None:
    """SIGTERM to each child, then SIGKILL to each child's process group still running `stop_s` later (a child
    that exits and leaves processes of its group behind is not done)."""
    for process in running.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + stop_s
    while (left := [name for name, process in running.items() if process.poll() is None or _alive(process.pid)]) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    for name in left:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.killpg(running[name].pid, signal.SIGKILL)
        say(f"{name} was still running {stop_s:g} s after SIGTERM: killed its process group (SIGKILL)")
    for process in running.values():
        process.wait()
    say("stopped")


def _alive(group: int) -> bool:
    """Whether a process of the group runs (a zombie, dead but not yet reaped, does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def main(argv: list[str]) -> None:
    """`python -m forge.supervisor PORT`"""
    [port] = argv
    sys.exit(supervise(serving(port), ready=f"Forge is running at http://127.0.0.1:{port}/ "
                                            "(Ctrl-C stops the console and the cluster)"))


if __name__ == "__main__":
    main(sys.argv[1:])
