"""Spec 15 on a real cluster, on SQLite and on PostgreSQL + Redis: the project's rule15 run cases end as they do
in the local runner (the run deadline among them: its timer is one of the run's timed inputs, the step in flight
is cancelled at it, the run fails with run_timeout and keeps its deadline_at), and `forge run` prints validation
warnings and goes on."""

from __future__ import annotations

import json

import pytest

from tests.cluster.harness import Deployment
from tests.cluster.test_conformance_on_cluster import OWN_CASES, compare_all, run_cases

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def cluster(request, tmp_path_factory):
    deployment = Deployment(tmp_path_factory.mktemp(f"rule15-{request.param}"), request.param)
    deployment.start_cluster()
    yield deployment
    deployment.close()


def test_the_rule15_run_cases_end_as_in_the_local_runner(cluster):
    cases = [case for case in run_cases(OWN_CASES) if case[0].startswith("run_rule15_")]
    assert {name for name, _, _ in cases} >= {"run_rule15_run_timeout", "run_rule15_sequential",
                                              "run_rule15_criteria_read_output"}
    failing = compare_all(cluster, cases)
    assert not failing, json.dumps(failing, indent=1)


def test_the_deadline_ends_the_run_with_run_timeout_and_its_deadline_kept(cluster):
    done = cluster.forge("run", str(OWN_CASES / "run_rule15_run_timeout.yaml"), "--wait", "--json",
                         "--timeout", "120")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["error_code"]) == ("failed", "run_timeout")
    assert {step: (v["status"], v["error_code"]) for step, v in result["steps"].items()} == {
        "quick": ("completed", None), "slow": ("cancelled", "run_timeout"), "flaky": ("cancelled", "run_timeout"),
        "after": ("cancelled", "run_timeout"), "cleanup": ("cancelled", "run_timeout")}
    run_id = int(done.stderr.split("run ", 1)[1].split()[0])
    created, deadline, finished, code = cluster.sql(
        "SELECT created_at, deadline_at, finished_at, error_code FROM forge_runs_run WHERE id = %s", (run_id,))[0]
    assert code == "run_timeout"
    assert (deadline - created).total_seconds() == pytest.approx(3, abs=0.01)
    assert finished >= deadline


def test_forge_run_prints_a_warning_and_runs(cluster, tmp_path):
    path = tmp_path / "typo_cluster.yaml"
    path.write_text("name: typo_cluster\nsteps:\n  - {id: a, agent: mock, command: a, condition: 'redy'}\n",
                    encoding="utf-8")
    done = cluster.forge("run", str(path), "--wait", "--json", "--timeout", "60")
    assert done.returncode == 0, done.stderr
    assert f"{path}:3:49: warning unknown_name [a]: 'redy' is not a name in scope" in done.stderr
    assert json.loads(done.stdout)["steps"]["a"]["status"] == "skipped"
