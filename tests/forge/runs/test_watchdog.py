"""The watchdog: a run whose due events waited too long is resumed once, and counted; past the limit it fails."""

from datetime import timedelta
from unittest import mock

from django.utils import timezone

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runtime import recovery
from forge.runs.models import Run, RunInput

ONE_STEP = """
name: lost_advance
steps:
  - id: only
    agent: mock
    command: noop
"""


def stuck_run(operator, save_workflow, *, restarts: int = 0) -> Run:
    """A started run whose advance was lost: its start event is long overdue."""
    run = services.run_start(user=operator, version=save_workflow(ONE_STEP))
    long_ago = timezone.now() - timedelta(seconds=recovery.STUCK_S * 2)
    RunInput.objects.filter(run=run).update(due_at=long_ago)
    Run.objects.filter(pk=run.pk).update(progressed_at=long_ago, restart_count=restarts)
    return run


def test_a_run_whose_advance_was_lost_is_resumed_once_and_counted(operator, save_workflow):
    run = stuck_run(operator, save_workflow)

    assert recovery.watchdog(timezone.now()) == 1
    assert recovery.watchdog(timezone.now()) == 0

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("completed", 1)
    resumed = AuditEvent.objects.filter(run_id=run.pk, code="forge.run.resumed")
    assert [(e.detail["by"], e.detail["restart_count"]) for e in resumed] == [("watchdog", 1)]


def test_a_resume_past_the_limit_fails_the_run_with_crash_loop(operator, save_workflow, settings,
                                                               django_capture_on_commit_callbacks):
    run = stuck_run(operator, save_workflow, restarts=settings.FORGE_MAX_RESTARTS)

    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.watchdog(timezone.now()) == 0

    run.refresh_from_db()
    assert (run.status, run.error_code, run.restart_count) == ("failed", "crash_loop", settings.FORGE_MAX_RESTARTS + 1)
    assert AuditEvent.objects.filter(run_id=run.pk, code="forge.run.failed").count() == 1


def test_a_run_whose_advance_is_lost_again_after_the_watchdog_resumed_it_is_counted_again(operator, save_workflow,
                                                                                           clock):
    run = stuck_run(operator, save_workflow)

    with mock.patch("forge.runtime.queue.enqueue_advance"):  # each advance the watchdog asks for is lost too
        assert recovery.watchdog(timezone.now()) == 1
        clock.advance(recovery.STUCK_S + 1)
        assert recovery.watchdog(timezone.now()) == 1

    run.refresh_from_db()
    assert (run.status, run.restart_count) == ("pending", 2)
