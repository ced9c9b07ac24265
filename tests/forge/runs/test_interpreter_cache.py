"""A worker's cached interpreter, when other workers advanced the run meanwhile."""

import pytest

from engine.interpreter import Interpreter
from forge.runs import services
from forge.runs.compiled import run_workflow
from forge.runtime import bridge
from forge.runs.models import Run
from tests.forge.conftest import fast_forward

CHAIN = """
name: chain_of_five
steps:
""" + "".join(f"""  - id: s{i}
    agent: mock
    command: step {i}
    mock: {{outputs: {{n: {i}}}, delay_s: 1}}
""" + (f"    depends_on: [s{i - 1}]\n" if i else "") for i in range(5))


@pytest.fixture
def half_run(operator, save_workflow):
    """A run two steps in, and a copy of its interpreter as a worker cached it then."""
    run = services.run_start(user=operator, version=save_workflow(CHAIN))
    fast_forward(run, rounds=3)
    run.refresh_from_db()
    behind = Interpreter(run_workflow(run), bridge.interpreter_of(run).state.copy())
    return run, behind, run.inputs_fed


def test_a_copy_a_few_events_behind_catches_up_to_the_state_a_rebuild_gives(half_run):
    run, behind, fed = half_run
    run = fast_forward(run)
    assert run.status == "completed" and run.inputs_fed > fed
    bridge.remember(Run(pk=run.pk, inputs_fed=fed), behind)

    caught_up = bridge.interpreter_of(run)

    assert caught_up is behind
    bridge.forget(run.pk)
    assert caught_up.state.to_json() == bridge.interpreter_of(run).state.to_json()
    assert caught_up.state.status == "completed"


def test_a_copy_ahead_of_the_database_is_not_used(half_run):
    """A copy from a round whose transaction rolled back must give way to the stored state."""
    run, behind, fed = half_run
    ahead = Run(pk=run.pk, inputs_fed=fed + 1)
    bridge.remember(ahead, behind)

    assert bridge.interpreter_of(run) is not behind
