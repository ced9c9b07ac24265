"""A clean stop: `bin/serve` and `qcluster` end within 10 s of SIGTERM or Ctrl-C, sent to their process group
or to their own pid, while a shell step runs, and leave no process behind; the step runs again at the next
start, and the stop is not counted as a crash."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from tests.cluster.harness import ROOT, deployed
from tests.sandboxed import kill_all, marker, pids_in_session, pids_mentioning

pytestmark = pytest.mark.slow

STOPPED_WITHIN_S = 10


def shell_workflow(name: str, mark: str, command: str) -> str:
    """One shell step, its command naming `mark` (a no-op first), so that the test finds its processes."""
    return json.dumps({"name": name, "steps": [{"id": "sh", "agent": "shell", "command": f": {mark}; {command}"}]})


def left(process: subprocess.Popen, mark: str) -> list[int]:
    """What runs of a process started in a session of its own, and of the steps naming `mark`."""
    return sorted({*pids_in_session(process.pid), *pids_mentioning(mark)})


def start_run(deployment, path) -> int:
    started = deployment.forge("run", str(path), "--json")
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout)["run"]


def workdir(deployment, run_id: int):
    return deployment.workdir / "work" / f"run-{run_id}"


def stop_and_wait(process: subprocess.Popen, how: str, mark: str) -> None:
    """Send the stop `how` names and wait until the process and everything of its session and of the step
    have ended, within STOPPED_WITHIN_S."""
    sent = time.monotonic()
    if how == "pid":
        os.kill(process.pid, signal.SIGTERM)
    else:
        os.killpg(process.pid, signal.SIGINT if how == "group-ctrl-c" else signal.SIGTERM)
    deadline = sent + STOPPED_WITHIN_S
    try:
        process.wait(timeout=deadline - time.monotonic())
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOPPED_WITHIN_S} s after the signal, with {left(process, mark)}")
    while pids := left(process, mark):
        assert time.monotonic() < deadline, f"left {STOPPED_WITHIN_S} s after the signal: {pids}"
        time.sleep(0.05)


# -- qcluster on its own -------------------------------------------------------------------------------------

def test_a_cluster_signalled_as_a_group_stops_hands_its_step_back_and_the_next_start_finishes_it(deployment,
                                                                                                tmp_path):
    mark = marker()
    path = tmp_path / "held.yaml"
    # The step says it started, waits until the test opens its gate, and records that it got past it.
    path.write_text(shell_workflow("held", mark, "touch started; while [ ! -e open ]; do sleep 0.1; done; "
                                                 "echo ran >> ran"))
    cluster = deployment.start_cluster()
    try:
        run_id = start_run(deployment, path)
        here = workdir(deployment, run_id)
        deployment.until(lambda: (here / "started").exists(), timeout=120, what="the shell step started")
        assert pids_mentioning(mark)

        stop_and_wait(cluster, "group", mark)  # what systemd and `kill -- -PGID` send

        (here / "open").touch()
        deployment.start_cluster()
        run = deployment.finished(run_id)
    finally:
        for process in deployment.processes:
            kill_all(left(process, mark))
        print(deployment.logs())  # shown when the test fails
    assert (run["status"], run["restart_count"]) == ("completed", 0), run
    assert (here / "ran").read_text() == "ran\n"  # run again by the next start, once


# -- bin/serve -----------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def deployments():
    """The deployment of a backend for bin/serve, made (migrated) once and started by each test. Its steps share
    one marker: a step a stop handed back runs again at the next start, and must be gone after the next stop
    too."""
    made = {}
    with contextlib.ExitStack() as stack:
        def deployment(backend: str):
            if backend not in made:
                made[backend] = stack.enter_context(deployed("forge-serve-", backend, on_error=print))
                made[backend].env["FORGE_PORT"] = str(free_port())
                made[backend].marker = marker()
            return made[backend]
        yield deployment


def serve(deployment) -> subprocess.Popen:
    """bin/serve in a session of its own, as a terminal or systemd starts it; returns once it runs."""
    log = deployment.workdir / "serve.log"
    with open(log, "w") as out:
        process = subprocess.Popen([str(ROOT / "bin" / "serve")], cwd=ROOT, env=deployment.env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deployment.until(lambda: "Forge is running" in log.read_text() or process.poll() is not None, timeout=300,
                     what="bin/serve started")
    assert process.poll() is None, log.read_text()
    return process


# Each signal on the embedded default; on PostgreSQL + Redis the group's SIGTERM (the signals are the
# supervisor's business, the backend the cluster's).
@pytest.mark.parametrize(("backend", "how"), [("sqlite", "group"), ("sqlite", "group-ctrl-c"), ("sqlite", "pid"),
                                             ("postgres", "group")])
def test_bin_serve_stops_within_10_s_with_a_shell_step_running_and_leaves_no_process(deployments, backend, how,
                                                                                   tmp_path):
    served = deployments(backend)
    mark = served.marker
    path = tmp_path / "sleepy.yaml"
    path.write_text(shell_workflow("sleepy", mark, f"touch started; sleep {mark}"))
    process = serve(served)
    try:
        run_id = start_run(served, path)
        served.until(lambda: (workdir(served, run_id) / "started").exists(), timeout=120,
                     what="the shell step started")
        session = set(pids_in_session(process.pid))
        assert session & set(pids_mentioning("qcluster")) and session & set(pids_mentioning("daphne"))
        assert pids_mentioning(mark)

        stop_and_wait(process, how, mark)
    finally:
        kill_all(left(process, mark))
        print((served.workdir / "serve.log").read_text()[-5000:])  # shown when the test fails
    assert process.returncode == 0
    assert "forge: stopped" in (served.workdir / "serve.log").read_text()
