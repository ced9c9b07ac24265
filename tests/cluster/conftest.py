import json

import pytest

from tests.cluster import postgres_pass
from tests.cluster.harness import Deployment, Gates

CALLABLES = ("forge.runs.callables.noop,tests.cluster.callables.ledger,tests.cluster.callables.gated,"
             "tests.cluster.callables.crash")


def pytest_collection_finish(session):
    postgres_pass.start_if_selected(session)


def pytest_sessionfinish(session):
    postgres_pass.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def deployment(request, tmp_path):
    """A migrated deployment on the embedded default, then on PostgreSQL + Redis; `deployment.ledger` counts
    executions of tests/cluster/callables.py steps and `deployment.gates` holds their `gated` steps."""
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    gates = Gates(tmp_path / "gates")
    deployed = Deployment(tmp_path, request.param, FORGE_PYTHON_CALLABLES=CALLABLES,
                          FORGE_TEST_LEDGER=str(ledger), FORGE_TEST_GATES=str(gates.path))
    deployed.ledger = ledger
    deployed.gates = gates
    yield deployed
    deployed.close()


def executions(deployment) -> dict[str, int]:
    """How many executions of each step reached the ledger (a killed one never does)."""
    counts: dict[str, int] = {}
    for line in deployment.ledger.read_text().splitlines():
        step = line.split()[1]
        counts[step] = counts.get(step, 0) + 1
    return counts


def start_run(deployment, path) -> int:
    """Start a run of the workflow file with `forge run`; its id."""
    started = deployment.forge("run", str(path), "--json")
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout)["run"]
