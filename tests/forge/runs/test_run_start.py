import pytest
from django.core.exceptions import PermissionDenied

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Run, RunEvent
from tests.forge.conftest import fast_forward, steps_of

CHAIN = """
name: chain
args:
  who: {type: string, default: world}
steps:
  - id: first
    agent: mock
    command: "greet ${args.who}"
    outputs: {greeting: {type: string}}
    mock: {outputs: {greeting: hello}}
  - id: second
    agent: mock
    command: "shout {{ first.outputs.greeting }}"
    outputs: {loud: {type: string}}
    mock: {outputs: {loud: HELLO}}
"""


def test_a_started_run_runs_to_completion_with_every_step_recorded(operator, save_workflow):
    version = save_workflow(CHAIN)
    run = services.run_start(user=operator, version=version, args={"who": "Ada"})
    run = fast_forward(run)
    assert run.status == "completed"
    steps = steps_of(run)
    assert steps["first"].outputs == {"greeting": "hello"}
    assert steps["second"].status == "completed"
    assert run.args == {"who": "Ada"}
    kinds = list(RunEvent.objects.filter(run=run).values_list("kind", flat=True))
    assert kinds.count("input") == run.inputs_fed
    codes = set(AuditEvent.objects.filter(run_id=run.pk).values_list("code", flat=True))
    assert {"forge.run.started", "forge.run.completed", "forge.governance.allowed"} <= codes


def test_an_outsider_cannot_start_a_run(outsider, save_workflow):
    version = save_workflow(CHAIN)
    with pytest.raises(PermissionDenied):
        services.run_start(user=outsider, version=version)
    assert not Run.objects.exists()


def test_bad_arguments_are_refused_and_create_nothing(operator, save_workflow):
    version = save_workflow(CHAIN)
    with pytest.raises(services.ServiceError, match="who"):
        services.run_start(user=operator, version=version, args={"who": 3, "nope": 1})
    assert not Run.objects.exists()
