"""Sub-workflows: a `workflow_ref` step runs a saved workflow as a child run and takes its variables.

Transactional database: the child run is started and advanced on commit, as on a cluster.
"""

import pytest

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, Run, StepResult

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

CHILD = """
name: child_flow
variables:
  region: eu
args:
  who: {type: string, default: nobody}
steps:
  - id: greet
    agent: mock
    command: "greet ${args.who}"
    outputs: {greeting: {type: string}}
    mock: {outputs: {greeting: hello}}
"""

PARENT = """
name: parent_flow
steps:
  - id: prepare
    agent: mock
    command: prepare
    mock: {outputs: {name: Ada}}
  - id: delegate
    workflow_ref: {name: child_flow, args: {who: "${prepare.outputs.name}"}}
  - id: use
    agent: mock
    command: "use {{ delegate.outputs.greeting }}"
    mock: {outputs: {used: true}}
"""

BARE = """
name: bare_parent
steps:
  - id: delegate
    workflow_ref: child_flow
"""

MISSING = BARE.replace("bare_parent", "orphan_parent").replace("workflow_ref: child_flow", "workflow_ref: ghost_flow")

FAILING_CHILD = CHILD.replace("mock: {outputs: {greeting: hello}}", 'mock: {fail_times: 1, error: "no greeting today"}')

WAITING_CHILD = """
name: child_flow
steps:
  - id: sign_off
    approval: required
"""


def start(operator, save_workflow, parent, *children):
    for child in children:
        save_workflow(child)
    run = services.run_start(user=operator, version=save_workflow(parent))
    run.refresh_from_db()
    return run


def step(run, step_id="delegate"):
    return StepResult.objects.get(run=run, step=step_id)


def test_the_step_runs_the_child_workflow_and_completes_with_its_variables(operator, save_workflow):
    run = start(operator, save_workflow, PARENT, CHILD)
    assert run.status == "completed"
    child = Run.objects.get(parent=run)
    assert (child.workflow.name, child.status, child.parent_step, child.parent_attempt) == (
        "child_flow", "completed", "delegate", 1)
    assert child.args == {"who": "Ada"}
    assert child.started_by == operator
    assert step(child, "greet").outputs == {"greeting": "hello"}
    assert (step(run).status, step(run).outputs) == ("completed", {"region": "eu", "who": "Ada",
                                                                   "greeting": "hello"})
    assert step(run, "use").status == "completed"
    started = AuditEvent.objects.get(code="forge.run.child_started", run_id=run.pk)
    assert (started.step, started.detail) == ("delegate", {"child_run": child.pk})


def test_a_bare_name_runs_the_latest_version_with_default_args(operator, save_workflow):
    save_workflow(CHILD)
    latest = save_workflow(CHILD.replace("greeting: hello", "greeting: hi"))
    run = start(operator, save_workflow, BARE)
    child = Run.objects.get(parent=run)
    assert (child.version, child.args) == (latest, {"who": "nobody"})
    assert step(run).outputs["greeting"] == "hi"


def test_a_missing_child_workflow_fails_the_step_with_a_clear_error(operator, save_workflow):
    run = start(operator, save_workflow, MISSING)
    delegate = step(run)
    assert (delegate.status, delegate.error_code) == ("failed", "subworkflow_failed")
    assert "there is no workflow 'ghost_flow'" in delegate.error
    assert run.status == "failed"
    assert not Run.objects.filter(parent=run).exists()


def test_a_failing_child_fails_the_parent_step_with_the_childs_error(operator, save_workflow):
    run = start(operator, save_workflow, BARE, FAILING_CHILD)
    child = Run.objects.get(parent=run)
    assert child.status == "failed"
    delegate = step(run)
    assert (delegate.status, delegate.error_code) == ("failed", "subworkflow_failed")
    assert "no greeting today" in delegate.error
    assert run.status == "failed"


def test_the_parent_waits_while_the_child_waits_and_goes_on_when_it_ends(operator, approver, save_workflow):
    run = start(operator, save_workflow, BARE, WAITING_CHILD)
    child = Run.objects.get(parent=run)
    assert (run.status, child.status, step(run).status, step(run).wait) == ("running", "running", "running",
                                                                            "child")
    services.approval_decide(user=approver, approval=Approval.objects.get(run=child), decision="approve")
    run.refresh_from_db()
    assert run.status == "completed"
    assert step(run).outputs == {"approved": True}


def test_cancelling_the_parent_cancels_the_child(operator, save_workflow):
    run = start(operator, save_workflow, BARE, WAITING_CHILD)
    child = Run.objects.get(parent=run)
    services.run_cancel(user=operator, run=run)
    run.refresh_from_db()
    child.refresh_from_db()
    assert run.status == "cancelled"
    assert child.status == "cancelled"
    assert Approval.objects.get(run=child).status == Approval.EXPIRED


def test_a_cycle_of_workflow_references_is_refused_at_run_start(operator, save_workflow):
    save_workflow("name: loop_b\nsteps:\n  - id: call_a\n    workflow_ref: loop_a\n")
    loop_a = save_workflow("name: loop_a\nsteps:\n  - id: call_b\n    workflow_ref: loop_b\n")
    with pytest.raises(services.ServiceError, match="cycle: loop_a -> loop_b -> loop_a"):
        services.run_start(user=operator, version=loop_a)
    assert not Run.objects.exists()
