"""On PostgreSQL the runtime's statements are prepared on the server, unless FORGE_DB_PREPARED_STATEMENTS=0."""

import pytest

from tests.cluster.harness import Deployment

# A 20-step chain advanced in the worker's own process, then what this session has prepared.
ADVANCE_AND_LIST_PREPARED = """
from django.db import connection
from forge.runs import services
from forge.runtime import store
from forge.runtime.rounds import advance
from forge.workflows.services import workflow_version_save
steps = "".join(f"  - id: s{i}\\n    agent: mock\\n    command: noop\\n" + (f"    depends_on: [s{i - 1}]\\n" if i else "")
                for i in range(20))
run = services.run_start(user=None, version=workflow_version_save(user=None, source="name: chain\\nsteps:\\n" + steps))
advance(run.pk)
run.refresh_from_db()
with connection.cursor() as cursor:
    cursor.execute("SELECT statement FROM pg_prepared_statements")
    prepared = [row[0] for row in cursor.fetchall()]
result = {"status": run.status, "lock_prepared": any(s.startswith(store._lock_sql()[:40]) for s in prepared),
          "prepared": len(prepared)}
"""


@pytest.fixture
def postgres(tmp_path):
    def deploy(**env):
        deployed = Deployment(tmp_path, "postgres", **env)
        deployments.append(deployed)
        return deployed
    deployments: list[Deployment] = []
    yield deploy
    for deployed in deployments:
        deployed.close()


def test_the_runtime_statements_are_prepared_on_the_server(postgres):
    found = postgres().query(ADVANCE_AND_LIST_PREPARED)
    assert found["status"] == "completed"
    assert found["lock_prepared"], found


def test_a_pooler_without_prepared_statements_can_turn_them_off(postgres):
    found = postgres(FORGE_DB_PREPARED_STATEMENTS="0").query(ADVANCE_AND_LIST_PREPARED)
    assert found["status"] == "completed"
    assert found["prepared"] == 0
