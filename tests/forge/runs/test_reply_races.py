"""Races on a loop's reply request (spec section 9): two people answering at once, and a reply that arrives as
the step's timeout fires. Exactly one outcome is taken, the other is refused in words, the audit says it once."""

import json
import threading

import pytest
from django.db import connection, transaction

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, RunEvent
from forge.runtime.rounds import advance
from tests.forge.conftest import steps_of
from tests.forge.runs.test_reply_give import TIMED, pending, start

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_two_people_answering_the_same_request_at_once_one_is_taken_the_other_refused(
        save_workflow, operator, approver, admin_user):
    run = start(save_workflow, operator)
    approval = pending(run)
    barrier = threading.Barrier(2)
    said = {}

    def answer(user, text):
        try:
            barrier.wait(timeout=10)
            said[text] = services.reply_give(user=user, approval=approval, text=text).status
        except services.ServiceError as exc:
            said[text] = str(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=pair) for pair in ((approver, "Friday"), (admin_user, "Monday"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    taken = [text for text, outcome in said.items() if outcome == Approval.ANSWERED]
    refused = [outcome for outcome in said.values() if outcome != Approval.ANSWERED]
    assert len(taken) == 1 and len(refused) == 1 and "already" in refused[0] and "answered" in refused[0]
    approval.refresh_from_db()
    assert (approval.status, approval.reply) == (Approval.ANSWERED, taken[0])
    codes = list(AuditEvent.objects.filter(run_id=run.pk, code__startswith="forge.approval.")
                 .exclude(code="forge.approval.requested").values_list("code", flat=True))
    assert codes == ["forge.approval.reply_requested", "forge.approval.answered"]


def test_a_reply_in_before_the_timeout_is_taken_though_the_run_takes_it_after(save_workflow, operator, approver,
                                                                               clock, monkeypatch):
    run = start(save_workflow, operator, TIMED)
    clock.advance(59.9)  # just before the 60 s
    monkeypatch.setattr(transaction, "on_commit", lambda *a, **k: None)  # no worker advances the run yet
    services.reply_give(user=approver, approval=pending(run), text="just in time")
    monkeypatch.undo()
    clock.advance(5)  # the worker comes after the timeout is due too: both inputs wait, the reply first
    advance(run.pk)
    run.refresh_from_db()
    first = Approval.objects.get(run=run, iteration=1)
    assert (first.status, first.reply) == (Approval.ANSWERED, "just in time")
    assert steps_of(run)["ask"].status != "timed_out"
    assert AuditEvent.objects.filter(run_id=run.pk, code="forge.approval.answered").count() == 1
    assert not AuditEvent.objects.filter(run_id=run.pk, code="forge.approval.reply_too_late").exists()


def test_a_reply_that_comes_after_a_cancel_is_refused_and_its_text_is_not_streamed(save_workflow, operator,
                                                                                    approver, monkeypatch):
    run = start(save_workflow, operator)
    approval = pending(run)
    monkeypatch.setattr(transaction, "on_commit", lambda *a, **k: None)  # both wait in the inbox, the cancel first
    services.run_cancel(user=operator, run=run)
    services.reply_give(user=approver, approval=approval, text="a private answer")
    monkeypatch.undo()
    advance(run.pk)
    run.refresh_from_db()
    approval.refresh_from_db()
    assert (run.status, approval.status, approval.reply) == ("cancelled", Approval.EXPIRED, "")
    rejected = RunEvent.objects.get(run=run, kind="rejected")
    assert "a private answer" not in json.dumps(rejected.data)
    assert rejected.data["event"]["length"] == len("a private answer")
    too_late = AuditEvent.objects.get(run_id=run.pk, code="forge.approval.reply_too_late")
    assert too_late.detail["length"] == len("a private answer")
    assert "a private answer" not in json.dumps(too_late.detail)
