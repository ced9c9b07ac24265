"""The round's SQL (forge/runs/store.py): the same rows and errors as the ORM, on SQLite and on PostgreSQL.

On PostgreSQL these statements go out in pipeline mode, where a failure is
only known when the pipeline syncs: it must still arrive as Django's error
and roll everything back.
"""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from forge.runs import services
from forge.runtime import store
from forge.runs.models import Run, RunInput, StepResult

ONE_STEP = """
name: one_step
steps:
  - id: only
    agent: mock
    command: noop
"""


@pytest.fixture
def run(operator, save_workflow):
    return services.run_start(user=operator, version=save_workflow(ONE_STEP), args={})


def test_the_locked_run_reads_as_the_orm_reads_it(run):
    expected = Run.objects.get(pk=run.pk)
    with transaction.atomic():
        locked = store.lock_run(run.pk)
    for field in Run._meta.concrete_fields:
        assert getattr(locked, field.attname) == getattr(expected, field.attname), field.name
    assert locked.version.source == expected.version.source


def test_a_missing_run_is_reported_as_such(db):
    with transaction.atomic(), pytest.raises(Run.DoesNotExist):
        store.lock_run(10 ** 9)


def test_the_round_reads_only_inputs_that_are_due_and_unprocessed(run):
    now = timezone.now()
    RunInput.objects.create(run=run, key="later", event={"type": "x"}, due_at=now + timezone.timedelta(hours=1),
                            created_at=now)
    RunInput.objects.create(run=run, key="done", event={"type": "x"}, due_at=now, created_at=now, processed_at=now)
    arrived = RunInput(run_id=run.pk, key="arrived", event={"type": "y", "n": 1}, due_at=now, created_at=now)

    with transaction.atomic():
        locked, inputs = store.open_round(run.pk, arrived=[arrived], due_by=now, limit=10)

    assert locked.pk == run.pk
    keys = [key for _, key, _ in inputs]
    assert "arrived" in keys and "later" not in keys and "done" not in keys
    assert dict((key, event) for _, key, event in inputs)["arrived"] == {"type": "y", "n": 1}


def test_a_failing_statement_raises_djangos_error_and_leaves_nothing(run):
    step = StepResult.objects.get(run=run, step="only")
    duplicate = RunInput.objects.filter(run=run).first()
    clash = RunInput(run_id=run.pk, key=duplicate.key, event={}, due_at=timezone.now(), created_at=timezone.now())

    with pytest.raises(IntegrityError), transaction.atomic():
        store.execute([store.updating(StepResult, {"error": "written before the failure"}, id=step.pk),
                       *store.inserting([clash])])

    step.refresh_from_db()
    assert step.error != "written before the failure"
    assert RunInput.objects.filter(run=run, key=duplicate.key).count() == 1
    with transaction.atomic():  # the connection is usable again
        assert store.lock_run(run.pk).pk == run.pk
