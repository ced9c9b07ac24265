"""The run deadline on the runtime (spec 15): the document's `timeout` is written as the run's `deadline_at`
when it starts, ends it `failed` with `run_timeout` when it passes (its steps cancelled, its requests expired),
is bounded by FORGE_RUN_TIMEOUT_MAX_S (refused at start, nothing created), and a restart counts its own."""

from datetime import timedelta

import pytest

from forge.runs import services
from forge.runs.models import Approval, Run, RunInput
from forge.runtime import inbox
from tests.forge.conftest import fast_forward, steps_of

WAITS = """
name: waits
timeout: {timeout}
steps:
  - id: prepare
    agent: mock
    command: prepare
  - id: sign
    approval: required
    depends_on: [prepare]
  - id: ship
    agent: mock
    command: ship
    depends_on: [sign]
  - id: cleanup
    agent: mock
    command: cleanup
    depends_on: [ship]
    trigger_rule: all_done
"""


def started(operator, save_workflow, timeout: str = "10m") -> Run:
    run = services.run_start(user=operator, version=save_workflow(WAITS.replace("{timeout}", timeout)))
    run.refresh_from_db()
    return run


def test_the_run_keeps_its_deadline_from_its_start(operator, save_workflow):
    run = started(operator, save_workflow)
    assert run.deadline_at == run.created_at + timedelta(minutes=10)
    fast_forward(run, rounds=1)  # RunStarted: the interpreter asks for the deadline's timer
    timers = [row.due_at for row in RunInput.objects.filter(run=run, processed_at=None) if inbox.timer_of(row.key)]
    assert timers == [run.deadline_at]


def test_a_document_without_timeout_has_no_deadline(operator, save_workflow):
    run = services.run_start(user=operator, version=save_workflow(WAITS.replace("timeout: {timeout}\n", "")))
    run.refresh_from_db()
    assert run.deadline_at is None


def test_when_the_deadline_passes_the_run_fails_with_run_timeout(operator, save_workflow):
    run = started(operator, save_workflow)
    assert fast_forward(run, rounds=1).status == "running"  # the first round: prepare ran, sign asks
    run = fast_forward(run)
    assert (run.status, run.error_code) == ("failed", "run_timeout")
    assert "timeout of 600 s passed" in run.error
    steps = steps_of(run)
    assert steps["prepare"].status == "completed"
    for step in ("sign", "ship", "cleanup"):
        assert (steps[step].status, steps[step].error_code) == ("cancelled", "run_timeout"), step
    assert list(Approval.objects.filter(run=run).values_list("step", "status")) == [("sign", "expired")]


def test_a_timeout_longer_than_the_installation_allows_is_refused_and_creates_nothing(operator, save_workflow,
                                                                                      settings):
    settings.FORGE_RUN_TIMEOUT_MAX_S = 3600
    version = save_workflow(WAITS.replace("{timeout}", "2h"))
    with pytest.raises(services.ServiceError, match=r"timeout is 7200 s, longer than this installation lets a run "
                                                    r"last \(at most 3600 s"):
        services.run_start(user=operator, version=version)
    assert not Run.objects.exists()
    assert services.run_start(user=operator, version=save_workflow(WAITS.replace("{timeout}", "1h"))).pk


def test_a_restart_counts_its_deadline_from_its_own_start(operator, save_workflow, clock):
    run = fast_forward(started(operator, save_workflow))
    assert run.error_code == "run_timeout"
    clock.advance(3600)
    again = services.run_restart(user=operator, run=run, step="ship")
    again.refresh_from_db()
    assert again.deadline_at == again.created_at + timedelta(minutes=10) > run.deadline_at
