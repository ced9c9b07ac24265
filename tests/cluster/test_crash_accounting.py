"""On a real cluster: one crash counts one restart of a run, however many of its steps it interrupted; a step
that kills its worker every time is stopped by the crash-loop breaker; an inline python step longer than a
lease is not taken for a crashed one. Every step a test kills or outwaits is held at a gate the test opens."""

from __future__ import annotations

import collections
import json
from datetime import timedelta

import pytest

from tests.cluster.conftest import executions, start_run
from tests.cluster.harness import now, queued_python_agent

pytestmark = pytest.mark.slow

WIDE = [f"s{i}" for i in range(1, 6)]
FIVE_WIDE = "name: five_wide\nsteps:\n" + "".join(
    f"  - {{id: {step}, agent: worker, command: tests.cluster.callables.gated}}\n" for step in WIDE
) + f"  - {{id: join, agent: mock, command: done, depends_on: [{', '.join(WIDE)}]}}\n"

CRASHING = """
name: crashing
steps:
  - {id: boom, agent: worker, command: tests.cluster.callables.crash}
  - {id: delegate, workflow_ref: {name: waits_for_a_person}}
  - {id: after, agent: mock, command: never, depends_on: [boom]}
"""
WAITS = "name: waits_for_a_person\nsteps:\n  - {id: ask, approval: required, approval_message: go on?}\n"

SLOW = [f"slow{i}" for i in range(1, 5)]
SLOW_INLINE = "name: slow_inline\nsteps:\n" + "".join(
    f"  - {{id: {step}, agent: python, command: tests.cluster.callables.gated}}\n" for step in SLOW
) + f"  - {{id: after, agent: mock, command: done, depends_on: [{', '.join(SLOW)}]}}\n"


def workflow(tmp_path, source: str):
    path = tmp_path / "workflow.yaml"
    path.write_text(source)
    return path


def resumes(deployment, run_id: int) -> collections.Counter:
    rows = deployment.sql("SELECT code FROM forge_audit_auditevent WHERE run_id = %s AND code LIKE %s",
                          (run_id, "%.resumed"))
    return collections.Counter(code for (code,) in rows)


def test_a_cluster_killed_while_five_steps_of_a_run_ran_counts_one_restart(deployment, tmp_path):
    deployment.env["FORGE_WORKERS"] = "6"  # all five run at once
    queued_python_agent(deployment)
    first = deployment.start_cluster()
    run_id = start_run(deployment, workflow(tmp_path, FIVE_WIDE))
    for step in WIDE:
        deployment.gates.wait_started(deployment, step)
    owners = {deployment.step_rows(run_id)[step]["lease_owner"] for step in WIDE}
    deployment.kill(first)
    for step in WIDE:
        deployment.gates.open(step)

    deployment.start_cluster()
    run = deployment.finished(run_id)

    assert (run["status"], run["restart_count"]) == ("completed", 1), run
    assert {step: deployment.gates.started(step) for step in WIDE} == dict.fromkeys(WIDE, 2)  # killed, resumed
    assert executions(deployment) == dict.fromkeys(WIDE, 1)  # each resumed attempt ran to its end once
    assert resumes(deployment, run_id) == {"forge.run.resumed": 1, "forge.step.resumed": 5}
    assert len(owners) == 5, owners  # each lease named the worker process that held it


def test_a_step_that_kills_its_worker_every_time_ends_the_run_with_crash_loop_after_four_executions(deployment,
                                                                                                   tmp_path):
    queued_python_agent(deployment)
    deployment.query("from forge.workflows.services import workflow_version_save\n"
                     f"result = workflow_version_save(user=None, source={WAITS!r}).number")
    deployment.start_cluster()
    run_id = start_run(deployment, workflow(tmp_path, CRASHING))

    run = deployment.finished(run_id, timeout=240)

    # FORGE_MAX_RESTARTS is 3: the first execution and three resumes; the fourth crash stops the run.
    assert (run["status"], run["error_code"], run["restart_count"]) == ("failed", "crash_loop", 4), run
    assert executions(deployment) == {"boom": 4}
    assert resumes(deployment, run_id) == {"forge.run.resumed": 4, "forge.step.resumed": 4}
    # The run's status, its step rows, its events and its child run all tell the same story.
    status = json.loads(deployment.forge("status", str(run_id), "--json").stdout)
    expected = {"boom": ("failed", "crash_loop"), "delegate": ("failed", "crash_loop"),
                "after": ("cancelled", "run_halted")}
    assert (status["status"], {s: (v["status"], v["error_code"]) for s, v in status["steps"].items()}) == (
        "failed", expected)
    rows = deployment.sql("SELECT step, status, error_code FROM forge_runs_stepresult WHERE run_id = %s", (run_id,))
    assert {step: (state, code) for step, state, code in rows} == expected
    events = deployment.sql("SELECT kind, step, data FROM forge_runs_runevent WHERE run_id = %s ORDER BY id",
                            (run_id,))
    events = [(kind, step, json.loads(data) if isinstance(data, str) else data) for kind, step, data in events]
    assert {step: data["status"] for kind, step, data in events if kind == "step"} == {
        step: state for step, (state, _) in expected.items()}
    assert (events[-1][0], events[-1][2]["error_code"]) == ("run", "crash_loop")
    child = deployment.until(lambda: deployment.sql(
        "SELECT r.status, a.status FROM forge_runs_run r JOIN forge_runs_approval a ON a.run_id = r.id "
        "WHERE r.parent_id = %s AND r.status = 'cancelled'", (run_id,)), timeout=60, what="the child is cancelled")
    assert child == [("cancelled", "expired")]


def test_four_inline_python_steps_longer_than_two_leases_run_once_each_and_count_no_restart(deployment,
                                                                                            tmp_path):
    """The advancing worker runs a round's inline calls one after the other: the first is held at its gate,
    the other three wait behind it, and all four keep their leases."""
    lease = timedelta(seconds=float(deployment.env["FORGE_LEASE_S"]))
    deployment.start_cluster()
    run_id = start_run(deployment, workflow(tmp_path, SLOW_INLINE))
    first = deployment.until(lambda: next((step for step in SLOW if deployment.gates.started(step)), None),
                             timeout=120, what="an inline step started")

    # Held at its gate until it has outlived its first lease twice over, by the database's own timestamps.
    started = deployment.step_rows(run_id)[first]["started_at"]
    deployment.until(lambda: now() > started + 2 * lease, timeout=120, what="two leases have passed")
    assert {step: deployment.gates.started(step) for step in SLOW} == {step: int(step == first) for step in SLOW}, \
        "a running step was started again"
    rows = deployment.step_rows(run_id)
    worker = str(deployment.gates.pids(first)[0])
    for step in SLOW:  # every one is still held by the advancing worker
        assert rows[step]["status"] == "running" and rows[step]["lease_expires_at"] > now(), rows[step]
        assert rows[step]["lease_owner"].split(":")[1] == worker, rows[step]
    reaped = deployment.query("from django.utils import timezone\nfrom forge.runtime import recovery\n"
                              "result = recovery.reap(timezone.now())")
    assert reaped == 0
    for step in SLOW:
        deployment.gates.open(step)

    run = deployment.finished(run_id)
    assert (run["status"], run["restart_count"]) == ("completed", 0), run
    assert {step: deployment.gates.started(step) for step in SLOW} == dict.fromkeys(SLOW, 1)
    assert executions(deployment) == dict.fromkeys(SLOW, 1)
