"""On a real cluster: a SIGKILLed worker's shell command dies with it, before a new cluster resumes the step,
so the resumed attempt never runs beside the old one."""

from __future__ import annotations

import json

import pytest

from tests.sandboxed import kill_all, marker, pids_mentioning

pytestmark = pytest.mark.slow

# The command says it started (a marker file named by a nonce of this execution) in its run's directory, the
# only place it sees, waits at its gate there, then records that it got past it. MARK names its processes.
GATED_SHELL = """
name: gated_shell
steps:
  - id: sh
    agent: shell
    command: >-
      id=$(cat /proc/sys/kernel/random/uuid); echo $id > .sh.$id && mv .sh.$id started.sh.$id;
      while [ ! -e open.sh ]; do sleep 0.1; done;
      echo $id >> ran.sh # MARK
  - {id: after, agent: mock, command: done, depends_on: [sh]}
"""


def test_a_killed_workers_shell_command_is_gone_before_a_new_cluster_resumes_the_step(deployment, tmp_path):
    mark = marker()
    path = tmp_path / "gated_shell.yaml"
    path.write_text(GATED_SHELL.replace("MARK", mark))
    first = deployment.start_cluster()
    started = deployment.forge("run", str(path), "--json")
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    gates = tmp_path / "work" / f"run-{run_id}"
    try:
        deployment.until(lambda: list(gates.glob("started.sh.*")), timeout=120, what="the shell step started")
        [old] = [found.name.rsplit(".", 1)[-1] for found in gates.glob("started.sh.*")]
        assert pids_mentioning(mark)

        deployment.kill(first)  # the cluster's processes only: the step's shell has a process group of its own
        deployment.until(lambda: not pids_mentioning(mark), timeout=60, what="the killed worker's shell ended")

        (gates / "open.sh").touch()
        deployment.start_cluster()
        run = deployment.finished(run_id)
    finally:
        kill_all(pids_mentioning(mark))

    assert (run["status"], run["restart_count"]) == ("completed", 1), run
    assert len(list(gates.glob("started.sh.*"))) == 2
    ran = (gates / "ran.sh").read_text().split()
    assert len(ran) == 1 and ran[0] != old, ran  # only the resumed attempt got past the gate
