"""A SIGKILLed cluster loses no step and repeats none: a new cluster finishes the run."""

from __future__ import annotations

import collections

import pytest

from tests.cluster.conftest import executions, start_run
from tests.cluster.harness import queued_python_agent

pytestmark = pytest.mark.slow

CHAIN = """
name: kill_chain
steps:
  - id: a
    agent: worker
    command: tests.cluster.callables.ledger
  - id: b
    agent: worker
    command: tests.cluster.callables.gated
    depends_on: [a]
  - id: c
    agent: worker
    command: tests.cluster.callables.ledger
    depends_on: [b]
  - id: d
    agent: mock
    command: finish
    depends_on: [c]
"""


def test_a_killed_cluster_loses_no_step_and_repeats_none(deployment, tmp_path):
    queued_python_agent(deployment)
    path = tmp_path / "kill_chain.yaml"
    path.write_text(CHAIN)
    first = deployment.start_cluster()
    run_id = start_run(deployment, path)
    deployment.gates.wait_started(deployment, "b")  # b is running, held at its gate: the kill lands inside it
    deployment.kill(first)
    deployment.gates.open("b")

    deployment.start_cluster()
    run = deployment.finished(run_id)
    assert (run["status"], run["restart_count"]) == ("completed", 1), run
    steps = deployment.step_rows(run_id)
    assert [steps[s]["status"] for s in "abcd"] == ["completed"] * 4
    assert deployment.gates.started("b") == 2  # the killed execution, and the resumed one
    assert executions(deployment) == {"a": 1, "b": 1, "c": 1}

    audit = deployment.sql("SELECT code, step, attempt FROM forge_audit_auditevent WHERE run_id = %s", (run_id,))
    counts = collections.Counter(audit)
    repeated = {row: n for row, n in counts.items() if n > 1}
    assert not repeated, repeated
    assert counts[("forge.run.resumed", "b", 1)] == 1, counts
    assert counts[("forge.step.resumed", "b", 1)] == 1, counts
