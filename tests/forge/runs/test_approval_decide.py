"""Deciding approvals and escalations: who may, what each decision does, and what is recorded.

These tests commit for real (transactional database) so that django-q2's
synchronous tasks run on commit: starting a run or deciding an approval
advances the run at once, as it does on a cluster.
"""

import io
import json

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.exceptions import PermissionDenied
from django.test import override_settings
from django.utils import timezone

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, RunInput, StepResult
from tests.forge.conftest import member, steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SIGN_OFF = """
name: sign_off_payment
steps:
  - id: prepare
    agent: mock
    command: prepare the payment
    outputs: {amount: {type: integer}}
    mock: {outputs: {amount: 10}}
  - id: sign_off
    approval: required
    approval_message: "Pay ${prepare.outputs.amount}?"
    depends_on: [prepare]
  - id: pay
    agent: mock
    command: pay
    depends_on: [sign_off]
    mock: {outputs: {paid: true}}
"""

FINANCE = SIGN_OFF.replace("name: sign_off_payment", "name: finance_sign_off").replace(
    "    approval: required\n", "    approval: required\n    approvers: [Finance]\n")

ADMINS_ONLY = SIGN_OFF.replace("name: sign_off_payment", "name: admins_sign_off").replace(
    "    approval: required\n", "    approval: required\n    approvers: [Admins]\n")

FLAKY = """
name: flaky_fetch
steps:
  - id: fetch
    agent: mock
    command: fetch the report
    on_failure: retry_once_then_escalate
    outputs: {rows: {type: integer}}
    mock: {fail_times: 2, error: "the service answered 503", outputs: {rows: 5}}
  - id: summarize
    agent: mock
    command: summarize
    depends_on: [fetch]
    mock: {outputs: {summary: ok}}
"""


TIMED = """
name: timed_sign_off
steps:
  - id: sign_off
    approval: required
    timeout: 60
"""


def start(save_workflow, user, source=SIGN_OFF):
    run = services.run_start(user=user, version=save_workflow(source))
    run.refresh_from_db()
    return run


def pending(run, step):
    return Approval.objects.get(run=run, step=step, status=Approval.PENDING)



def snapshot(run, approval):
    """What a refused decision must leave exactly as it was."""
    approval.refresh_from_db()
    run.refresh_from_db()
    return (approval.status, approval.decision, approval.decided_by_id, run.status,
            RunInput.objects.filter(run=run).count(), AuditEvent.objects.count(),
            sorted(StepResult.objects.filter(run=run).values_list("step", "status")))


class TestApprovalStep:
    def test_the_run_waits_at_the_approval_step_with_its_message(self, operator, save_workflow):
        run = start(save_workflow, operator)
        assert run.status == "running"
        approval = pending(run, "sign_off")
        assert approval.kind == "approval"
        assert approval.message == "Pay 10?"
        assert approval.options == ["approve", "reject"]
        assert steps_of(run)["sign_off"].status == "waiting"
        assert steps_of(run)["pay"].status == "pending"

    def test_approving_completes_the_step_with_approved_true_and_the_run_goes_on(
            self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        services.approval_decide(user=approver, approval=pending(run, "sign_off"), decision="approve")
        run.refresh_from_db()
        steps = steps_of(run)
        assert steps["sign_off"].status == "completed"
        assert steps["sign_off"].outputs == {"approved": True}
        assert steps["pay"].status == "completed"
        assert run.status == "completed"
        decided = Approval.objects.get(run=run, step="sign_off")
        assert (decided.status, decided.decision, decided.decided_by) == ("approved", "approve", approver)

    def test_a_queued_step_after_the_approval_runs_in_the_same_process_and_the_run_completes(
            self, operator, approver, save_workflow):
        # django-q2's sync mode runs the queued shell step inside the decision's commit, in this process.
        source = SIGN_OFF.replace("    agent: mock\n    command: pay\n", "    agent: shell\n    command: echo paid\n")
        source = source.replace("    mock: {outputs: {paid: true}}\n", "")
        assert "agent: shell" in source and "paid: true" not in source
        run = start(save_workflow, operator, source)
        services.approval_decide(user=approver, approval=pending(run, "sign_off"), decision="approve")
        run.refresh_from_db()
        assert run.status == "completed", {step: row.error for step, row in steps_of(run).items()}

    def test_rejecting_fails_the_step_and_halts_the_run(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        services.approval_decide(user=approver, approval=pending(run, "sign_off"), decision="reject",
                                 comment="too much")
        run.refresh_from_db()
        steps = steps_of(run)
        assert (steps["sign_off"].status, steps["sign_off"].error_code) == ("failed", "rejected")
        assert (steps["pay"].status, steps["pay"].error_code) == ("failed", "upstream_failed")
        assert run.status == "failed"
        assert Approval.objects.get(run=run, step="sign_off").status == "rejected"

    @pytest.mark.parametrize("decision, code", [("approve", "forge.approval.approved"),
                                                ("reject", "forge.approval.rejected")])
    def test_each_decision_is_audited_with_the_deciders_username(self, operator, approver, save_workflow,
                                                                  decision, code):
        run = start(save_workflow, operator)
        services.approval_decide(user=approver, approval=pending(run, "sign_off"), decision=decision,
                                 comment="checked")
        event = AuditEvent.objects.get(code=code, run_id=run.pk)
        assert (event.actor, event.actor_id, event.step) == ("april", approver.pk, "sign_off")
        assert event.detail["decision"] == decision
        assert event.detail["comment"] == "checked"


class TestWhoMayDecide:
    @pytest.mark.parametrize("who, why", [("outsider", "in no group of this console"), ("operator", "not an approver")])
    def test_people_who_are_not_approvers_are_refused_and_nothing_changes(self, request, operator, save_workflow,
                                                                          who, why):
        run = start(save_workflow, operator)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match=why):
            services.approval_decide(user=request.getfixturevalue(who), approval=approval, decision="approve")
        assert snapshot(run, approval) == before

    def test_the_person_who_started_the_run_cannot_decide_it(self, save_workflow):
        both = member("bea", "Operators", "Approvers")
        run = start(save_workflow, both)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="you started this run"):
            services.approval_decide(user=both, approval=approval, decision="approve")
        assert snapshot(run, approval) == before

    def test_with_self_approval_allowed_the_starter_may_decide(self, save_workflow):
        both = member("bea", "Operators", "Approvers")
        run = start(save_workflow, both)
        with override_settings(FORGE_ALLOW_SELF_APPROVAL=True):
            services.approval_decide(user=both, approval=pending(run, "sign_off"), decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"
        assert Approval.objects.get(run=run, step="sign_off").decided_by == both

    def test_an_approval_for_admins_refuses_a_plain_approver(self, operator, approver, admin_user, save_workflow):
        run = start(save_workflow, operator, ADMINS_ONLY)
        approval = pending(run, "sign_off")
        assert approval.approvers == ["Admins"]
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="Admins"):
            services.approval_decide(user=approver, approval=approval, decision="approve")
        assert snapshot(run, approval) == before
        services.approval_decide(user=admin_user, approval=approval, decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"


class TestNamedApproverGroups:
    """`approvers: [Finance]`: Finance members decide, whether or not they are also in Approvers (they must be in a
    group of the console, as everyone who sees runs: Operators here)."""

    @pytest.fixture
    def finance(self, db):
        Group.objects.create(name="Finance")
        return member("fiona", "Finance", "Operators")

    def test_a_finance_member_decides_it_and_an_approver_outside_finance_cannot(
            self, operator, approver, finance, save_workflow):
        run = start(save_workflow, operator, FINANCE)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="needs a member of Finance"):
            services.approval_decide(user=approver, approval=approval, decision="approve")
        assert snapshot(run, approval) == before
        services.approval_decide(user=finance, approval=approval, decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"
        assert Approval.objects.get(run=run, step="sign_off").decided_by == finance
        assert AuditEvent.objects.get(code="forge.approval.approved", run_id=run.pk).actor == "fiona"

    def test_a_finance_member_in_no_group_of_the_console_cannot_decide_it_nor_list_it(
            self, operator, finance, save_workflow):
        finance.groups.remove(Group.objects.get(name="Operators"))  # the console refuses her every page of the run
        run = start(save_workflow, operator, FINANCE)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="in no group of this console"):
            services.approval_decide(user=finance, approval=approval, decision="approve")
        out = io.StringIO()
        call_command("forge", "--user", finance.username, "approvals", "--json", stdout=out)
        assert json.loads(out.getvalue()) == []
        assert snapshot(run, approval) == before

    def test_the_finance_member_who_started_the_run_decides_it_only_with_self_approval_allowed(
            self, finance, save_workflow):
        run = start(save_workflow, finance, FINANCE)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="you started this run"):
            services.approval_decide(user=finance, approval=approval, decision="approve")
        assert snapshot(run, approval) == before
        with override_settings(FORGE_ALLOW_SELF_APPROVAL=True):
            services.approval_decide(user=finance, approval=approval, decision="approve")
        run.refresh_from_db()
        assert run.status == "completed"

    def test_forge_approvals_lists_it_for_finance_members_and_admins_only(
            self, operator, approver, admin_user, finance, save_workflow):
        run = start(save_workflow, operator, FINANCE)

        def listed(user):
            out = io.StringIO()
            call_command("forge", "--user", user.username, "approvals", "--json", stdout=out)
            return [(row["run"], row["step"]) for row in json.loads(out.getvalue())]

        assert listed(finance) == listed(admin_user) == [(run.pk, "sign_off")]
        assert listed(approver) == listed(operator) == []


class TestBadDecisions:
    def test_a_decision_that_is_not_an_option_is_refused(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        approval = pending(run, "sign_off")
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match="approve, reject"):
            services.approval_decide(user=approver, approval=approval, decision="retry")
        assert snapshot(run, approval) == before

    def test_deciding_twice_is_refused(self, operator, approver, admin_user, save_workflow):
        run = start(save_workflow, operator)
        approval = pending(run, "sign_off")
        services.approval_decide(user=approver, approval=approval, decision="approve")
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match="already approved"):
            services.approval_decide(user=admin_user, approval=approval, decision="reject")
        assert snapshot(run, approval) == before
        assert list(AuditEvent.objects.filter(code__startswith="forge.approval.", run_id=run.pk).exclude(
            code="forge.approval.requested").values_list("code", flat=True)) == [
                "forge.approval.decision_requested", "forge.approval.approved"]

    def test_a_decision_after_the_approval_timed_out_is_not_recorded_as_approved(self, operator, approver,
                                                                                save_workflow, clock):
        run = start(save_workflow, operator, TIMED)
        assert (pending(run, "sign_off").expires_at - clock()).total_seconds() == pytest.approx(60, abs=0.01)
        clock.advance(61)  # the 60 s passed while no worker advanced the run: the timeout is due, unprocessed
        with pytest.raises(services.ServiceError, match="timed out at .* before the decision"):
            services.approval_decide(user=approver, approval=pending(run, "sign_off"), decision="approve")
        run.refresh_from_db()
        assert (steps_of(run)["sign_off"].status, run.status) == ("timed_out", "failed")
        assert Approval.objects.get(run=run).status == Approval.EXPIRED
        assert not AuditEvent.objects.filter(code="forge.approval.approved", run_id=run.pk).exists()


class TestEscalation:
    def test_a_step_that_keeps_failing_asks_a_person_to_retry_skip_or_abort(self, operator, save_workflow):
        run = start(save_workflow, operator, FLAKY)
        escalation = pending(run, "fetch")
        assert escalation.kind == "escalation"
        assert escalation.options == ["retry", "skip", "abort"]
        fetch = steps_of(run)["fetch"]
        assert (fetch.status, fetch.attempt, fetch.error_code) == ("waiting", 2, "agent_error")

    @pytest.mark.parametrize("decision, step_status, run_status, summarize", [
        ("retry", "completed", "completed", "completed"),
        ("skip", "skipped", "completed", "skipped"),
        ("abort", "failed", "failed", "failed"),
    ])
    def test_the_answer_decides_how_the_step_ends(self, operator, approver, save_workflow, decision, step_status,
                                                  run_status, summarize):
        run = start(save_workflow, operator, FLAKY)
        services.approval_decide(user=approver, approval=pending(run, "fetch"), decision=decision)
        run.refresh_from_db()
        steps = steps_of(run)
        assert steps["fetch"].status == step_status
        assert steps["summarize"].status == summarize
        assert run.status == run_status
        if decision == "retry":
            assert (steps["fetch"].attempt, steps["fetch"].outputs) == (3, {"rows": 5})
        event = AuditEvent.objects.get(code=f"forge.approval.escalation_{decision}", run_id=run.pk)
        assert event.actor == "april"
        record = Approval.objects.get(run=run, step="fetch")
        assert record.status == ("rejected" if decision == "abort" else "approved")
