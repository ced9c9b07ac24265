"""A SIGKILLed cluster loses no step and repeats none: a new cluster finishes the run."""

from __future__ import annotations

import collections
import json
import time

import pytest

from tests.cluster.conftest import queued_python_agent

pytestmark = pytest.mark.slow

CHAIN = """
name: kill_chain
steps:
  - id: a
    agent: worker
    command: tests.cluster.callables.ledger
  - id: b
    agent: worker
    command: tests.cluster.callables.ledger
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
    deployment.env["FORGE_TEST_STEP_SECONDS"] = "1.5"
    queued_python_agent(deployment)
    path = tmp_path / "kill_chain.yaml"
    path.write_text(CHAIN)
    first = deployment.start_cluster()
    started = deployment.forge("run", str(path), "--json")
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    deployment.wait_for(
        f"from forge.runs.models import StepResult\n"
        f"result = StepResult.objects.filter(run_id={run_id}, step='b', status='running', executing=True).exists()",
        timeout=60, every=0.2)
    time.sleep(0.5)  # b is in the middle of its work
    deployment.kill(first)

    deployment.start_cluster()
    deployment.wait_for(f"from forge.runs.models import Run\nresult = Run.objects.get(pk={run_id}).finished",
                        timeout=120)
    report = json.loads(deployment.forge("status", str(run_id), "--json").stdout)
    assert report["status"] == "completed", report
    assert [report["steps"][s]["status"] for s in "abcd"] == ["completed"] * 4

    executions = collections.Counter(line.split()[1] for line in deployment.ledger.read_text().splitlines())
    assert executions == {"a": 1, "b": 1, "c": 1}, executions

    audit = deployment.query(
        f"from forge.audit.models import AuditEvent\n"
        f"result = list(AuditEvent.objects.filter(run_id={run_id}).values_list('code', 'step', 'attempt'))")
    counts = collections.Counter(tuple(row) for row in audit)
    repeated = {row: n for row, n in counts.items() if n > 1}
    assert not repeated, repeated
    run = deployment.query(f"from forge.runs.models import Run\nresult = Run.objects.get(pk={run_id}).restart_count")
    assert run == 1
    assert counts[("forge.run.resumed", "b", 1)] == 1, counts
