"""A worker's shell command dies with the worker (issue 9, finding 10).

Another worker resumes an attempt whose worker died; the old command must
not go on beside the new one. The "worker" here is a Python process running
ShellExecutor on a command whose shell and background child sleep for a
duration no other process uses; the test kills the worker with SIGKILL once
both sleep, and waits (with a generous deadline, never a fixed sleep) for
both to end.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.sandboxed import marker, pids_sleeping
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60

WORKER = """
import sys, threading
from engine.executors import ShellExecutor, StepRequest
from engine.model import Step
command, workdir = sys.argv[1], sys.argv[2]
spec = Step.model_validate({"id": "s", "agent": "shell", "command": command})
request = StepRequest(run_id="r", step="s", attempt=1, agent="shell", command=command, spec=spec,
                      timeout_s=3600, workdir=workdir)
ShellExecutor().execute(request, threading.Event())
"""


def test_a_killed_workers_shell_command_and_its_children_die_with_it(tmp_path):
    seconds = marker()
    command = f"sleep {seconds} & sleep {seconds}; wait"
    worker = subprocess.Popen([sys.executable, "-c", WORKER, command, str(tmp_path)], cwd=ROOT)
    pids: list[int] = []
    try:
        assert wait_until(lambda: len(pids_sleeping(seconds)) == 2 or worker.poll() is not None), \
            "the command never started"
        assert worker.poll() is None, "the worker ended by itself"
        pids = pids_sleeping(seconds)

        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=DEADLINE_S)

        assert wait_until(lambda: not pids_sleeping(seconds)), \
            f"still running after the worker died: {pids_sleeping(seconds)}"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        for pid in pids_sleeping(seconds):  # never leave them behind, whatever the outcome
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
