"""bin/serve's supervisor on its own, with small children: who it stops, how, and what it says."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sandboxed import kill_all, marker, pids_sleeping
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def supervise(children: dict[str, str], stop_s: float = 8.0) -> subprocess.Popen:
    """The supervisor in a session of its own, running `sh -c` children; returns once it said it runs."""
    commands = {name: ["sh", "-c", script] for name, script in children.items()}
    program = (f"import sys; from forge.supervisor import supervise\n"
               f"sys.exit(supervise({commands!r}, ready='running', stop_s={stop_s}))")
    process = subprocess.Popen([sys.executable, "-c", program], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    return process


def ready(process: subprocess.Popen, lines: int) -> None:
    """Wait until `lines` lines came on stdout (the supervisor's `running`, then each child's own)."""
    for _ in range(lines):
        assert process.stdout.readline(), process.communicate(timeout=30)


@pytest.fixture
def mark():
    """What the children sleep, so that the test finds them, and kills them whatever happens."""
    mark = marker()
    yield mark
    kill_all(pids_sleeping(mark))


def test_ctrl_c_reaches_only_the_supervisor_which_stops_every_child_with_sigterm(mark):
    # Each child says on stdout which signal reached it; one sent to the whole group would reach them first.
    child = f"sleep {mark} & trap 'echo {{name}} got TERM; kill $!; exit' TERM; " \
            f"trap 'echo {{name}} got INT; kill $!; exit' INT; echo up; wait"
    process = supervise({"one": child.format(name="one"), "two": child.format(name="two")})
    ready(process, 3)

    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals its foreground group
    out, err = process.communicate(timeout=10)

    assert process.returncode == 0, err
    assert sorted(out.split("\n")[:-1]) == ["one got TERM", "two got TERM"]
    assert err == "forge: stopping: SIGINT received\nforge: stopped\n"
    assert wait_until(lambda: not pids_sleeping(mark), 10)


def test_a_child_still_running_after_the_deadline_is_killed_with_its_process_group_and_the_log_says_so(mark):
    # The second child ends on SIGTERM but leaves a process of its group behind, which ignores it.
    process = supervise({"stubborn": f"trap '' TERM; sleep {mark} & echo up; wait",
                         "leaving": f"(trap '' TERM; exec sleep {mark}) & echo up; wait",
                         "willing": f"exec sleep {mark}"}, stop_s=1)
    ready(process, 3)
    sent = time.monotonic()

    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=10)

    assert process.returncode == 0
    assert 1 <= time.monotonic() - sent < 5
    assert err == ("forge: stopping: SIGTERM received\n"
                   "forge: stubborn was still running 1 s after SIGTERM: killed its process group (SIGKILL)\n"
                   "forge: leaving was still running 1 s after SIGTERM: killed its process group (SIGKILL)\n"
                   "forge: stopped\n")
    assert wait_until(lambda: not pids_sleeping(mark), 10)  # the sleeps were in the groups


def test_a_child_that_exits_stops_the_others_and_the_supervisor_fails(mark):
    process = supervise({"server": f"exec sleep {mark}", "cluster": "exit 3"})

    _, err = process.communicate(timeout=30)

    assert process.returncode == 1
    assert err == "forge: stopping: cluster exited with code 3\nforge: stopped\n"
    assert wait_until(lambda: not pids_sleeping(mark), 10)


def test_a_child_that_cannot_start_stops_the_others_and_the_supervisor_fails(mark, tmp_path):
    commands = {"server": ["sleep", mark], "cluster": [str(tmp_path / "missing")]}
    program = f"import sys; from forge.supervisor import supervise\nsys.exit(supervise({commands!r}))"

    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=30)

    assert done.returncode == 1
    assert done.stderr.startswith("forge: stopping: cluster could not start: [Errno 2] No such file or directory")
    assert done.stderr.endswith("forge: stopped\n")
    assert wait_until(lambda: not pids_sleeping(mark), 10)
