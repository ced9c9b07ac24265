"""On a real cluster: a SIGKILLed worker's shell command dies with it, before a new cluster resumes the step,
so the resumed attempt never runs beside the old one."""

from __future__ import annotations

import json

import pytest

from tests.cluster.harness import Gates, alive

pytestmark = pytest.mark.slow

# The command says it started (a marker holding its shell's pid, as Gates reads them), waits at its gate,
# then records that it got past it.
GATED_SHELL = """
name: gated_shell
args:
  gates: {type: string}
steps:
  - id: sh
    agent: shell
    command: >-
      echo $$ > ${args.gates}/.sh.$$ && mv ${args.gates}/.sh.$$ ${args.gates}/started.sh.$$;
      while [ ! -e ${args.gates}/open.sh ]; do sleep 0.1; done;
      echo $$ >> ${args.gates}/ran.sh
  - {id: after, agent: mock, command: done, depends_on: [sh]}
"""


def test_a_killed_workers_shell_command_is_gone_before_a_new_cluster_resumes_the_step(deployment, tmp_path):
    gates: Gates = deployment.gates
    path = tmp_path / "gated_shell.yaml"
    path.write_text(GATED_SHELL)
    first = deployment.start_cluster()
    started = deployment.forge("run", str(path), "--json", "--arg", f"gates={gates.path}")
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    try:
        gates.wait_started(deployment, "sh")
        [old] = gates.pids("sh")
        assert alive(old)

        deployment.kill(first)  # the cluster's processes only: the step's shell has a process group of its own
        deployment.until(lambda: not alive(old), timeout=60, what=f"the killed worker's shell {old} ended")

        gates.open("sh")
        deployment.start_cluster()
        run = deployment.finished(run_id)
    finally:
        gates.kill_started("sh")

    assert (run["status"], run["restart_count"]) == ("completed", 1), run
    assert gates.started("sh") == 2
    ran = (gates.path / "ran.sh").read_text().split()
    assert len(ran) == 1 and int(ran[0]) != old, ran  # only the resumed attempt got past the gate
