"""A worker's shell command dies with the worker (issue 9, finding 10).

Another worker resumes an attempt whose worker died; the old command must
not go on beside the new one. The "worker" here is a Python process running
ShellExecutor on a command that records its own pid and a child's, then
loops; the test kills the worker with SIGKILL once both pids are written,
and waits (with a generous deadline, never a fixed sleep) for both to end.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.engine.test_executors import is_alive
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
    pids_file = tmp_path / "pids"
    command = (f'sleep 3600 & echo "$$ $!" > {pids_file}.part && mv {pids_file}.part {pids_file}; '
               "while :; do sleep 1; done")
    worker = subprocess.Popen([sys.executable, "-c", WORKER, command, str(tmp_path)], cwd=ROOT)
    pids: list[int] = []
    try:
        assert wait_until(lambda: pids_file.exists() or worker.poll() is not None), "the command never started"
        assert worker.poll() is None, "the worker ended by itself"
        pids = [int(pid) for pid in pids_file.read_text().split()]
        assert len(pids) == 2 and all(is_alive(pid) for pid in pids)

        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=DEADLINE_S)

        assert wait_until(lambda: not any(is_alive(pid) for pid in pids)), \
            f"still running after the worker died: {[pid for pid in pids if is_alive(pid)]}"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        for pid in pids:  # never leave them behind, whatever the outcome
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
