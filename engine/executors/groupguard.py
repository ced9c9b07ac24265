"""Kills a shell step's process group when the worker that started it dies (issue 9, finding 10).

ShellExecutor starts this file as a script (`python -I -S groupguard.py FD`), as the leader of a new
process group, before the step's `sh`, which joins that group. FD is the read end of a pipe whose write
end only the worker holds. When the step ends, the worker writes to it and this process exits. When the
worker dies first, however it dies (SIGKILL included), the kernel closes the write end, the read returns
nothing, and the whole group is killed, so a resumed attempt never runs beside the old one. A parent-death
signal would not do: it reaches only one process, and fires when the forking thread ends.

It imports nothing from the engine, so that it starts in a few milliseconds.
"""

import os
import signal
import sys

if __name__ == "__main__":
    try:
        told = os.read(int(sys.argv[1]), 64)
    except OSError:
        told = b""
    if not told:
        os.killpg(0, signal.SIGKILL)  # the worker is gone: this group, this process included
