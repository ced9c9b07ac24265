"""On a real cluster, on both backends: a hostile shell step reaches neither the data folder, nor another run,
nor its worker, nor PostgreSQL or Redis, and cannot exhaust the machine; each attack ends as a normal step
failure and the workers live on. The same workflow on a cluster with FORGE_SHELL_SANDBOX=off succeeds, so the
attacks are real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.attacks import SECRET, attacks
from tests.cluster.harness import Deployment, alive
from tests.engine.test_sandbox import CONTROL_NEEDS

pytestmark = pytest.mark.slow


def processes_of(cluster) -> list[int]:
    """The cluster's processes below its parent: the sentinel, the workers, the monitor, the pusher."""
    parents = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[-1].split()[1])
            except OSError:
                continue
    found, frontier = [], [cluster.pid]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def attack_workflow(data: Path, worker: int) -> str:
    steps = [{"id": name, "agent": "shell", "command": command, "timeout": 60, "on_failure": "skip"}
             for name, command in attacks(data, worker, "run-999").items()]
    return json.dumps({"name": "hostile_steps", "steps": steps})


def run_attacks(deployment: Deployment, data: Path) -> tuple[dict, dict[str, dict]]:
    (data / "secret_key").write_text(SECRET)
    if not (data / "forge.sqlite3").exists():
        (data / "forge.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(100))
    (data / "work" / "run-999").mkdir(parents=True, exist_ok=True)
    (data / "work" / "run-999" / "notes.txt").write_text("another run's notes")
    cluster = deployment.start_cluster()
    deployment.until(lambda: len(processes_of(cluster)) >= 4, timeout=120, what="the cluster's workers started")
    workers = processes_of(cluster)
    flow = data / "hostile.yaml"
    flow.write_text(attack_workflow(data, workers[0]))
    started = deployment.forge("run", str(flow), "--json")
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    run = deployment.finished(run_id, timeout=600)
    assert alive(cluster.pid) and all(alive(pid) for pid in workers), "a worker died"
    rows = deployment.sql("SELECT step, status, error_code, error FROM forge_runs_stepresult WHERE run_id = %s",
                          (run_id,))
    return run, {step: {"status": status, "error_code": code, "error": error} for step, status, code, error in rows}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_attack_fails_as_a_step_failure_and_the_workers_live_on(tmp_path, backend):
    deployment = Deployment(tmp_path, backend)
    try:
        run, steps = run_attacks(deployment, tmp_path)
    finally:
        deployment.close()
    assert run["status"] == "completed", run
    outcome = {step: (row["status"], row["error_code"]) for step, row in steps.items()}
    assert outcome == {name: ("skipped", "exit_code") for name in attacks(tmp_path, 1)}, outcome
    assert not (tmp_path / "planted").exists() and not Path("/usr/local/planted").exists()


def test_without_the_sandbox_the_same_attacks_work(tmp_path):
    deployment = Deployment(tmp_path, "sqlite", FORGE_SHELL_SANDBOX="off")
    try:
        run, steps = run_attacks(deployment, tmp_path)
    finally:
        deployment.close()
        for planted in (tmp_path / "planted", Path("/usr/local/planted")):
            planted.unlink(missing_ok=True)
    worked = {step for step, row in steps.items() if row["status"] == "completed"}
    expected = {name for name in attacks(tmp_path, 1) if CONTROL_NEEDS.get(name, True)}
    assert worked >= expected, {step: row["error"] for step, row in steps.items() if step not in worked}
