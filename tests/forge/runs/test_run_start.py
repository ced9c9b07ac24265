import io

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command

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


def args_of_size(size: int) -> dict:
    """{"who": "xxx..."}, exactly `size` bytes as compact JSON."""
    return {"who": "x" * (size - len('{"who":""}'))}


def test_arguments_over_64_kib_in_all_are_refused_with_the_bound_said_and_create_nothing(operator,
                                                                                           save_workflow):
    version = save_workflow(CHAIN)
    with pytest.raises(services.ServiceError,
                       match=r"65537 bytes as JSON, more than this installation allows \(at most 65536 bytes\)"):
        services.run_start(user=operator, version=version, args=args_of_size(65_537))
    assert not Run.objects.exists()
    assert not AuditEvent.objects.filter(code="forge.run.started").exists()
    run = services.run_start(user=operator, version=version, args=args_of_size(65_536))
    assert len(run.args["who"]) == 65_536 - len('{"who":""}')


def test_the_bound_on_arguments_is_the_installations_setting(operator, save_workflow, settings):
    settings.FORGE_MAX_ARGS_BYTES = 32
    version = save_workflow(CHAIN)
    with pytest.raises(services.ServiceError, match=r"\(at most 32 bytes\)"):
        services.run_start(user=operator, version=version, args={"who": "Ada Lovelace, Countess of Lovelace"})
    assert not Run.objects.exists()


def test_forge_run_refuses_65_kib_of_arguments_with_exit_code_2_and_a_clear_message(db, tmp_path):
    path = tmp_path / "chain.yaml"
    path.write_text(CHAIN)
    err = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("forge", "run", str(path), "--arg", "who=" + "x" * 65 * 1024, stdout=io.StringIO(), stderr=err)
    assert exited.value.code == 2
    assert "forge: the run's arguments are" in err.getvalue() and "(at most 65536 bytes)" in err.getvalue()
    assert not Run.objects.exists()


def test_a_restart_whose_arguments_exceed_the_bound_is_refused_clearly(operator, save_workflow, settings):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(CHAIN), args={"who": "Ada"}))
    settings.FORGE_MAX_ARGS_BYTES = 8  # lowered since the run started
    with pytest.raises(services.ServiceError, match=r"\(at most 8 bytes\)"):
        services.run_restart(user=operator, run=run, step="second")
    assert Run.objects.count() == 1


DELEGATES = """
name: delegates
steps:
  - id: prepare
    agent: mock
    command: prepare
    mock: {outputs: {name: "Ada Lovelace, Countess of Lovelace"}}
  - id: delegate
    workflow_ref: {name: chain, args: {who: "${prepare.outputs.name}"}}
"""


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_sub_workflow_given_arguments_over_the_bound_fails_its_step_with_the_reason(operator, save_workflow,
                                                                                     settings):
    settings.FORGE_MAX_ARGS_BYTES = 32
    save_workflow(CHAIN)
    run = services.run_start(user=operator, version=save_workflow(DELEGATES))
    run.refresh_from_db()
    delegate = steps_of(run)["delegate"]
    assert (run.status, delegate.status) == ("failed", "failed")
    assert "(at most 32 bytes)" in delegate.error and "FORGE_" not in delegate.error
    assert not Run.objects.filter(parent=run).exists()
