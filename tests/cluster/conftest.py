import pytest

from tests.cluster.harness import Deployment

CALLABLES = "forge.runs.callables.noop,tests.cluster.callables.ledger"


@pytest.fixture(params=["sqlite", "postgres"])
def deployment(request, tmp_path):
    """A migrated deployment on the embedded default, then on PostgreSQL + Redis."""
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    deployed = Deployment(tmp_path, request.param, FORGE_PYTHON_CALLABLES=CALLABLES,
                          FORGE_TEST_LEDGER=str(ledger))
    deployed.ledger = ledger
    yield deployed
    deployed.close()


def queued_python_agent(deployment) -> None:
    """A python agent whose steps go through execute_step (not inline in advance)."""
    deployment.query("from forge.governance.models import Agent\n"
                     "Agent.objects.update_or_create(name='worker', defaults={'provider': 'python', "
                     "'config': {'inline': False}})\nresult = True")
