"""What the console's page tests share: a workflow with an approval, and a run of it waiting for that approval."""

import pytest

from forge.runs import services
from tests.forge.conftest import fast_forward

APPROVAL = """
name: needs_a_yes
steps:
  - {id: prepare, agent: mock, command: prepare, mock: {outputs: {ready: true}}}
  - {id: sign_off, approval: required, approval_message: ship it?, depends_on: [prepare]}
  - {id: ship, agent: mock, command: ship, depends_on: [sign_off]}
"""


@pytest.fixture
def run(save_workflow, operator):
    version = save_workflow(APPROVAL)
    return fast_forward(services.run_start(user=operator, version=version))
