"""Who a decision is credited to, what the audit says when, and how a decision reads.

The person is carried by id from the request to the row (a username can be renamed, and a system decision is
nobody's); the request is audited when made and the outcome when the run's round takes it; every page words a
decision with forge.runs.decision_words."""

from datetime import datetime, timezone

import pytest

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.decision_words import decided_words, flash_words
from forge.runs.models import Approval, RunEvent, RunInput
from forge.runtime import inbox
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db

FLAKY = """
name: flaky_fetch
steps:
  - id: fetch
    agent: mock
    command: fetch
    on_failure: retry_once_then_escalate
    mock: {fail_times: 2, error: "the service answered 503", outputs: {rows: 5}}
"""


def waiting(save_workflow, operator, source=APPROVAL):
    return fast_forward(services.run_start(user=operator, version=save_workflow(source)))


def decision_codes(run):
    return list(AuditEvent.objects.filter(run_id=run.pk, code__startswith="forge.approval.").exclude(
        code="forge.approval.requested").order_by("id").values_list("code", "actor", "actor_id"))


def test_a_system_decision_is_credited_to_nobody_even_with_a_user_named_system(save_workflow, operator):
    member("system", "Approvers")
    run = waiting(save_workflow, operator)
    services.approval_decide(user=None, approval=Approval.objects.get(run=run), decision="approve")
    fast_forward(run)
    approval = Approval.objects.get(run=run)
    assert (approval.status, approval.decided_by) == ("approved", None)
    event = RunEvent.objects.filter(run=run, kind="approval").last()
    assert (event.data["by"], event.data["by_id"], event.data["decision"]) == (None, None, "approve")
    assert decision_codes(run) == [("forge.approval.decision_requested", "system", None),
                                   ("forge.approval.approved", "system", None)]


def test_the_decider_is_credited_by_id_though_renamed_before_the_round(save_workflow, operator, approver):
    run = waiting(save_workflow, operator)
    services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="approve")
    approver.username = "april.renamed"
    approver.save()
    member("april", "Approvers")  # someone else now holds the old name
    fast_forward(run)
    assert Approval.objects.get(run=run).decided_by == approver


@pytest.mark.parametrize("by, credited", [("april", "april"), ("system", None), ("nobody-by-that-name", None)])
def test_a_decision_queued_before_ids_were_carried_is_credited_by_username_never_to_system(
        save_workflow, operator, approver, by, credited):
    member("system", "Approvers")
    run = waiting(save_workflow, operator)
    approval = Approval.objects.get(run=run)
    old_shape = {"type": "ApprovalDecided", "step": "sign_off", "decision": "approve", "by": by, "comment": None,
                 "at": 0.0}  # what approval_decide wrote before decisions carried by_id
    RunInput.objects.create(run=run, key=inbox.decision(approval.key), event=old_shape)
    fast_forward(run)
    approval.refresh_from_db()
    assert approval.status == "approved"
    assert (approval.decided_by.username if approval.decided_by else None) == credited
    assert run.__class__.objects.get(pk=run.pk).status == "completed"


def test_the_request_is_audited_when_made_and_the_outcome_only_when_the_round_takes_it(
        save_workflow, operator, approver):
    run = waiting(save_workflow, operator)
    services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="reject",
                             comment="not yet")
    assert decision_codes(run) == [("forge.approval.decision_requested", "april", approver.pk)]
    assert Approval.objects.get(run=run).status == "pending"
    fast_forward(run)
    assert decision_codes(run) == [("forge.approval.decision_requested", "april", approver.pk),
                                   ("forge.approval.rejected", "april", approver.pk)]
    outcome = AuditEvent.objects.get(run_id=run.pk, code="forge.approval.rejected")
    assert (outcome.step, outcome.detail) == ("sign_off", {"kind": "approval", "decision": "reject",
                                                            "comment": "not yet"})


@pytest.mark.parametrize("decision, code, words", [
    ("retry", "forge.approval.escalation_retry", "Retry chosen by april"),
    ("skip", "forge.approval.escalation_skip", "Skipped by april"),
    ("abort", "forge.approval.escalation_abort", "Aborted by april")])
def test_an_escalation_reads_what_was_chosen_on_the_step_panel_and_in_the_audit(
        client, save_workflow, operator, approver, decision, code, words):
    run = waiting(save_workflow, operator, FLAKY)
    services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision=decision)
    fast_forward(run)
    assert decision_codes(run) == [("forge.approval.decision_requested", "april", approver.pk),
                                   (code, "april", approver.pk)]
    client.force_login(operator)
    html = client.get(f"/runs/{run.pk}/steps/fetch/").content.decode()
    assert words + " at " in html and "Approved by" not in html
    log = client.get(f"/runs/{run.pk}/log/?format=text").content.decode()
    assert words in log and "approved (" not in log  # the run log words it the same way


def test_a_decision_that_comes_too_late_is_audited_as_such_in_the_persons_name(save_workflow, operator, approver):
    run = waiting(save_workflow, operator)
    approval = Approval.objects.get(run=run)
    services.run_cancel(user=operator, run=run)
    services.approval_decide(user=approver, approval=approval, decision="approve")
    # Both due at once: fed in the order asked, so the cancel ends the approval before the decision reaches it.
    RunInput.objects.filter(run=run, processed_at=None).update(due_at=approval.requested_at)
    fast_forward(run)
    assert decision_codes(run)[-1] == ("forge.approval.decision_too_late", "april", approver.pk)
    assert not AuditEvent.objects.filter(run_id=run.pk, code="forge.approval.approved").exists()


AT = datetime(2026, 11, 25, 10, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("status, decision, by, words", [
    ("approved", "approve", "april", "Approved by april at 2026-11-25 10:00:00 UTC"),
    ("rejected", "reject", "april", "Rejected by april at 2026-11-25 10:00:00 UTC"),
    ("approved", "retry", "april", "Retry chosen by april at 2026-11-25 10:00:00 UTC"),
    ("approved", "skip", "april", "Skipped by april at 2026-11-25 10:00:00 UTC"),
    ("rejected", "abort", "april", "Aborted by april at 2026-11-25 10:00:00 UTC"),
    ("approved", "approve", None, "Approved at 2026-11-25 10:00:00 UTC"),
    ("expired", None, None, "Expired at 2026-11-25 10:00:00 UTC: no decision came in time"),
    ("pending", None, None, "Waiting for a decision"),
])
def test_one_function_words_every_decision(status, decision, by, words):
    assert decided_words(status, decision, by, AT) == words


@pytest.mark.parametrize("decision, status, words", [
    ("approve", "approved", "You approved sign_off in run 7."),
    ("reject", "rejected", "You rejected sign_off in run 7."),
    ("retry", "approved", "You chose to retry sign_off in run 7."),
    ("skip", "approved", "You skipped sign_off in run 7."),
    ("abort", "rejected", "You aborted sign_off in run 7."),
    ("approve", "pending", "You approved sign_off in run 7. The run is recording it."),
    ("approve", "expired", "Too late: sign_off in run 7 timed out before your decision, so nothing was decided."),
])
def test_the_flash_after_a_decision_is_a_sentence_to_the_person(decision, status, words):
    assert flash_words(decision, Approval(run_id=7, step="sign_off", status=status)) == words


def test_a_run_decided_before_ids_were_carried_still_loads_reports_and_restarts(save_workflow, operator, approver):
    from engine.interpreter.events import event_from_json
    from forge.runs.models import Checkpoint
    from forge.runs.selectors import run_report
    from forge.runtime import bridge

    run = waiting(save_workflow, operator)
    services.approval_decide(user=approver, approval=Approval.objects.get(run=run), decision="approve")
    run = fast_forward(run)
    assert run.status == "completed"
    # Make its log and checkpoints the old shape: no by_id in the decision fed, nor in the approval records.
    for event in RunEvent.objects.filter(run=run, kind=bridge.INPUT, data__type="ApprovalDecided"):
        del event.data["by_id"]
        RunEvent.objects.filter(pk=event.pk).update(data=event.data)  # append-only for the product, not the past
    for checkpoint in Checkpoint.objects.filter(run=run):
        for record in checkpoint.state["approvals"]:
            record.pop("by_id", None)
        checkpoint.save()
    assert RunEvent.objects.filter(run=run, kind=bridge.INPUT, data__type="ApprovalDecided").exists()
    approved = [{"step": "sign_off", "kind": "approval", "status": "approved", "decision": "approve"}]
    bridge.forget(run.pk)
    assert Checkpoint.objects.filter(run=run).exists()
    report = run_report(run)  # from the old-shaped checkpoint
    assert (report["status"], report["approvals"]) == ("completed", approved)
    old_event = RunEvent.objects.get(run=run, kind=bridge.INPUT, data__type="ApprovalDecided").data
    assert event_from_json(old_event).by_id is None  # a replay from the log reads it as no one's id
    again = services.run_restart(user=operator, run=run, step="ship")
    assert fast_forward(again).status == "completed"
