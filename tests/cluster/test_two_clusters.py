"""Two clusters serving one PostgreSQL database never execute a step attempt twice."""

from __future__ import annotations

import collections
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cluster.conftest import CALLABLES
from tests.cluster.harness import Deployment, queued_python_agent

pytestmark = pytest.mark.slow

RUNS = 20
WORKFLOW = """
name: shared_load
steps:
  - {id: fetch, agent: worker, command: tests.cluster.callables.ledger}
  - {id: left, agent: worker, command: tests.cluster.callables.ledger, depends_on: [fetch]}
  - {id: right, agent: worker, command: tests.cluster.callables.ledger, depends_on: [fetch]}
  - {id: middle, agent: worker, command: tests.cluster.callables.ledger, depends_on: [fetch]}
  - {id: join, agent: worker, command: tests.cluster.callables.ledger, depends_on: [left, right, middle]}
  - {id: note, agent: mock, command: done, depends_on: [join]}
"""


@pytest.fixture
def shared(tmp_path):
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    deployment = Deployment(tmp_path, "postgres", FORGE_PYTHON_CALLABLES=CALLABLES, FORGE_TEST_LEDGER=str(ledger),
                            FORGE_WORKERS="3")
    deployment.ledger = ledger
    yield deployment
    deployment.close()


def test_two_clusters_run_twenty_runs_without_executing_any_attempt_twice(shared, tmp_path):
    queued_python_agent(shared)
    path = tmp_path / "shared_load.yaml"
    path.write_text(WORKFLOW)
    shared.start_cluster()
    shared.start_cluster()

    def start(_):
        done = shared.forge("run", str(path), "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run"]

    with ThreadPoolExecutor(10) as pool:
        run_ids = list(pool.map(start, range(RUNS)))
    shared.wait_for("from forge.runs.models import Run\n"
                    f"result = Run.objects.filter(pk__in={run_ids}, status='completed').count() == {RUNS}",
                    timeout=240, every=1)

    executions = collections.Counter(tuple(line.split()) for line in shared.ledger.read_text().splitlines())
    assert len(executions) == RUNS * 5
    twice = {key: n for key, n in executions.items() if n > 1}
    assert not twice, twice
    workers = shared.query("from django_q.models import Task\nresult = 0")  # results are not stored (save_limit -1)
    assert workers == 0
