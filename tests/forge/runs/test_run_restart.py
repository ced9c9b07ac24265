"""Restart-from-step (spec section 8): a new run that carries over what need not run again.

Transactional database, so the runs (including their shell steps) advance on commit.
"""

from datetime import timedelta
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runtime.execution import claim_attempt
from forge.runs.models import Run, StepResult
from tests.forge.conftest import steps_of

# The flag stands for something outside the run that the operator fixes: the steps run outside their sandbox.
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.usefixtures("unsandboxed")]

# `check` fails until the flag file exists; `side` does not depend on it.
RESTARTABLE = """
name: restartable
args:
  flag: {type: string, required: true}
steps:
  - id: fetch
    agent: mock
    command: fetch
    outputs: {rows: {type: integer}}
    mock: {outputs: {rows: 7}, tokens: 10, cost: 0.5}
  - id: side
    agent: mock
    command: side
    mock: {outputs: {note: kept}}
  - id: check
    agent: shell
    command: "test -f ${args.flag} && echo '{\\"ok\\": true}'"
    depends_on: [fetch]
    outputs: {ok: {type: boolean}}
  - id: report
    agent: mock
    command: "report {{ fetch.outputs.rows }} rows, ok {{ check.outputs.ok }}"
    depends_on: [check]
    mock: {outputs: {done: true}}
"""



@pytest.fixture
def failed_run(operator, save_workflow, tmp_path):
    flag = tmp_path / "ready"
    run = services.run_start(user=operator, version=save_workflow(RESTARTABLE), args={"flag": str(flag)})
    run.refresh_from_db()
    assert run.status == "failed"
    steps = steps_of(run)
    assert (steps["check"].status, steps["check"].error_code) == ("failed", "exit_code")
    assert steps["report"].error_code == "upstream_failed"
    flag.touch()  # what the operator fixed before restarting
    return run


def dispatched_steps(run):
    return set(AuditEvent.objects.filter(code="forge.governance.allowed", run_id=run.pk)
               .values_list("step", flat=True))


class TestRestartFromStep:
    def test_completed_steps_not_downstream_are_carried_over_and_the_rest_runs_again(self, operator, failed_run):
        before = steps_of(failed_run)
        new = services.run_restart(user=operator, run=failed_run, step="check")
        new.refresh_from_db()
        assert new.pk != failed_run.pk
        assert (new.restarted_from, new.restart_from_step, new.version) == (failed_run, "check", failed_run.version)
        assert new.args == failed_run.args
        assert new.status == "completed"
        after = steps_of(new)
        for carried in ("fetch", "side"):
            assert after[carried].status == "completed"
            assert after[carried].outputs == before[carried].outputs
            assert after[carried].attempt == before[carried].attempt
        assert after["check"].outputs == {"ok": True}
        assert after["report"].status == "completed"
        assert dispatched_steps(new) == {"check", "report"}  # carried steps are not called again

    def test_restarting_from_an_upstream_step_reruns_it_and_its_dependents_only(self, operator, failed_run):
        new = services.run_restart(user=operator, run=failed_run, step="fetch")
        new.refresh_from_db()
        assert new.status == "completed"
        assert dispatched_steps(new) == {"fetch", "check", "report"}
        assert steps_of(new)["side"].outputs == {"note": "kept"}

    def test_the_old_run_is_left_as_it_was(self, operator, failed_run):
        before = sorted(StepResult.objects.filter(run=failed_run).values_list("step", "status", "attempt"))
        services.run_restart(user=operator, run=failed_run, step="check")
        failed_run.refresh_from_db()
        assert failed_run.status == "failed"
        assert sorted(StepResult.objects.filter(run=failed_run).values_list("step", "status", "attempt")) == before

    def test_a_restart_is_audited_with_who_and_from_where(self, operator, failed_run):
        new = services.run_restart(user=operator, run=failed_run, step="check")
        event = AuditEvent.objects.get(code="forge.run.restarted")
        assert (event.actor, event.run_id, event.step) == ("olive", new.pk, "check")
        assert event.detail == {"from_run": failed_run.pk, "from_step": "check"}


class TestRefusedRestarts:
    def test_a_running_run_cannot_be_restarted(self, operator, save_workflow, tmp_path):
        with mock.patch("forge.runtime.queue.enqueue_execution"):  # the shell step never reports back
            run = services.run_start(user=operator, version=save_workflow(RESTARTABLE),
                                     args={"flag": str(tmp_path / "ready")})
        run.refresh_from_db()
        assert run.status == "running"
        with pytest.raises(services.ServiceError, match="still running"):
            services.run_restart(user=operator, run=run, step="check")
        assert Run.objects.count() == 1
        assert not AuditEvent.objects.filter(code="forge.run.restarted").exists()

    def test_an_unknown_step_is_refused_naming_the_steps(self, operator, failed_run):
        with pytest.raises(services.ServiceError, match="no step 'nope'.*fetch, side, check, report"):
            services.run_restart(user=operator, run=failed_run, step="nope")
        assert Run.objects.count() == 1
        assert not AuditEvent.objects.filter(code="forge.run.restarted").exists()

    @pytest.mark.parametrize("who", ["outsider", "approver"])
    def test_people_who_may_not_restart_are_refused(self, request, failed_run, who):
        with pytest.raises(PermissionDenied):
            services.run_restart(user=request.getfixturevalue(who), run=failed_run, step="check")
        assert Run.objects.count() == 1


def test_a_run_stopped_by_the_crash_loop_breaker_can_be_restarted(operator, save_workflow, tmp_path, settings):
    settings.FORGE_MAX_RESTARTS = 0
    with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
        run = services.run_start(user=operator, version=save_workflow(RESTARTABLE),
                                 args={"flag": str(tmp_path / "ready")})
    _, step, attempt, fence = enqueue.call_args.args
    assert claim_attempt(run.pk, step, attempt, fence) is not None  # a worker took the step, then died
    StepResult.objects.filter(run=run, step=step).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert claim_attempt(run.pk, step, attempt, fence, resume=True) is None  # the first resume is one too many
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "crash_loop")
    (tmp_path / "ready").touch()
    new = services.run_restart(user=operator, run=run, step="check")
    new.refresh_from_db()
    assert new.status == "completed"
    assert steps_of(new)["fetch"].outputs == {"rows": 7}
