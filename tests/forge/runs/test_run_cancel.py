"""Cancelling runs: a run paused for a person, and a run whose shell step is running (the process is killed).

Transactional database: work queued on commit runs at once (django-q2 sync),
and the worker thread of the kill test needs committed rows.
"""

import threading
from unittest import mock

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runtime.execution import execute_step
from forge.runs.models import Approval, RunInput, StepResult
from tests.forge.conftest import steps_of
from tests.sandboxed import marker, pids_sleeping
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PAUSED = """
name: paused_for_a_person
steps:
  - id: prepare
    agent: mock
    command: prepare
    mock: {outputs: {ready: true}}
  - id: sign_off
    approval: required
    depends_on: [prepare]
  - id: act
    agent: mock
    command: act
    depends_on: [sign_off]
"""

SLEEPY = """
name: sleepy_shell
args:
  seconds: {type: string, required: true}
steps:
  - id: nap
    agent: shell
    command: "exec sleep ${args.seconds}"
  - id: after
    agent: mock
    command: after the nap
    depends_on: [nap]
"""


class TestCancelAPausedRun:
    def test_cancelling_a_run_waiting_for_approval_cancels_it_and_expires_the_approval(self, operator,
                                                                                        save_workflow):
        run = services.run_start(user=operator, version=save_workflow(PAUSED))
        assert Approval.objects.get(run=run).status == Approval.PENDING
        services.run_cancel(user=operator, run=run, reason="not needed any more")
        run.refresh_from_db()
        assert (run.status, run.error_code) == ("cancelled", "run_cancelled")
        assert "olive" in run.error and "not needed any more" in run.error
        steps = steps_of(run)
        assert steps["prepare"].status == "completed"
        assert (steps["sign_off"].status, steps["sign_off"].error_code) == ("cancelled", "run_cancelled")
        assert (steps["act"].status, steps["act"].error_code) == ("cancelled", "run_cancelled")
        assert Approval.objects.get(run=run).status == Approval.EXPIRED
        requested = AuditEvent.objects.get(code="forge.run.cancel_requested", run_id=run.pk)
        assert (requested.actor, requested.detail) == ("olive", {"reason": "not needed any more"})
        assert AuditEvent.objects.filter(code="forge.run.cancelled", run_id=run.pk).count() == 1

    def test_an_expired_approval_can_no_longer_be_decided(self, operator, approver, save_workflow):
        run = services.run_start(user=operator, version=save_workflow(PAUSED))
        approval = Approval.objects.get(run=run)
        services.run_cancel(user=operator, run=run)
        with pytest.raises(services.ServiceError):
            services.approval_decide(user=approver, approval=approval, decision="approve")
        run.refresh_from_db()
        assert run.status == "cancelled"

    def test_cancelling_an_ended_run_is_refused(self, operator, save_workflow):
        run = services.run_start(user=operator, version=save_workflow(PAUSED))
        services.run_cancel(user=operator, run=run)
        audits = AuditEvent.objects.count()
        with pytest.raises(services.ServiceError, match="already ended"):
            services.run_cancel(user=operator, run=run)
        assert AuditEvent.objects.count() == audits

    @pytest.mark.parametrize("who", ["outsider", "approver"])
    def test_people_who_may_not_cancel_are_refused_and_the_run_goes_on(self, request, operator, save_workflow,
                                                                       who):
        run = services.run_start(user=operator, version=save_workflow(PAUSED))
        with pytest.raises(PermissionDenied):
            services.run_cancel(user=request.getfixturevalue(who), run=run)
        run.refresh_from_db()
        assert run.status == "running"
        assert not RunInput.objects.filter(run=run, key="cancel").exists()
        assert not AuditEvent.objects.filter(code="forge.run.cancel_requested").exists()
        assert Approval.objects.get(run=run).status == Approval.PENDING


class TestCancelARunningShellStep:
    def test_the_shell_process_is_killed_and_its_late_result_is_only_recorded(self, operator, save_workflow,
                                                                              tmp_path):
        seconds = marker()
        with mock.patch("forge.runtime.queue.enqueue_execution") as enqueue:
            run = services.run_start(user=operator, version=save_workflow(SLEEPY),
                                     args={"seconds": seconds})
        enqueue.assert_called_once()
        run_id, step, attempt, fence = enqueue.call_args.args
        assert (run_id, step, attempt) == (run.pk, "nap", 1)

        outcome = {}

        def worker():
            try:
                outcome["result"] = execute_step(run_id, step, attempt, fence)
            finally:
                connection.close()

        thread = threading.Thread(target=worker, name="execute_step nap")
        thread.start()
        try:
            assert wait_until(lambda: pids_sleeping(seconds), 60), "the step never started"
            assert StepResult.objects.get(run=run, step="nap").executing

            services.run_cancel(user=operator, run=run, reason="taking too long")
            thread.join(timeout=60)  # the command would sleep 600 s
            assert not thread.is_alive(), "the worker did not stop after the cancel"
            assert wait_until(lambda: not pids_sleeping(seconds), 60), "the shell process still runs"
        finally:
            thread.join(timeout=60)

        assert outcome["result"] == "run_ended"
        run.refresh_from_db()
        assert (run.status, run.error_code) == ("cancelled", "run_cancelled")
        steps = steps_of(run)
        assert (steps["nap"].status, steps["nap"].error_code) == ("cancelled", "run_cancelled")
        assert steps["nap"].executing is False
        assert steps["after"].status == "cancelled"
        assert AuditEvent.objects.filter(code="forge.step.cancelled", run_id=run.pk, step="nap").count() == 1
        late = AuditEvent.objects.get(code="forge.step.result_after_end", run_id=run.pk)
        assert (late.step, late.attempt) == ("nap", 1)
        assert late.detail["ok"] is False and late.detail["error_code"] == "cancelled"
        assert not RunInput.objects.filter(run=run, key__startswith="done:nap").exists()
