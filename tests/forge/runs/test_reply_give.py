"""Answering a loop's reply request (spec section 9's reply gates): who may, what the answer does, what is kept
and what is audited, and every refusal changing nothing.

These tests commit for real (transactional database) so that django-q2's synchronous tasks run on commit: a
reply advances the run at once, as it does on a cluster.
"""

import hashlib
import io
import json

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.core.management import call_command

from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, RunInput, StepResult
from forge.runs.selectors import approvals_for_user, replies_so_far, run_report, step_iterations
from tests.forge.conftest import member, steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

INTERVIEW = """
name: interview
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration} after ${loop.replies}"
    approval_message: "Answer question ${loop.iteration}"
    outputs: {question: {type: string}}
    loop: {max_iterations: 3, gate: reply}
    mock:
      sequence:
        - {stdout: "What is the deadline?", outputs: {question: deadline}}
        - {stdout: "Who signs it off?", outputs: {question: sign_off}}
        - {stdout: "Thanks, that is all.", outputs: {question: done}}
  - id: summary
    agent: mock
    command: "summarize"
    depends_on: [ask]
"""

FINANCE = INTERVIEW.replace("name: interview", "name: finance_interview").replace(
    "    loop: {max_iterations: 3, gate: reply}\n", "    loop: {max_iterations: 3, gate: reply}\n    approvers: [Finance]\n")

TIMED = INTERVIEW.replace("name: interview", "name: timed_interview").replace(
    "    loop: {max_iterations: 3, gate: reply}\n", "    loop: {max_iterations: 3, gate: reply}\n    timeout: 60\n")


def start(save_workflow, user, source=INTERVIEW):
    run = services.run_start(user=user, version=save_workflow(source))
    run.refresh_from_db()
    return run


def pending(run, step="ask"):
    return Approval.objects.get(run=run, step=step, status=Approval.PENDING)


def snapshot(run, approval):
    """What a refused reply must leave exactly as it was."""
    approval.refresh_from_db()
    run.refresh_from_db()
    return (approval.status, approval.reply, approval.decided_by_id, run.status,
            RunInput.objects.filter(run=run).count(), AuditEvent.objects.count(),
            sorted(StepResult.objects.filter(run=run).values_list("step", "status", "iteration")))


def digest(text):
    return {"length": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}


class TestTheRequest:
    def test_after_the_first_iteration_the_step_waits_for_a_reply_showing_that_iterations_output(
            self, operator, save_workflow):
        run = start(save_workflow, operator)
        request = pending(run)
        assert (request.kind, request.options, request.iteration) == ("reply", ["reply"], 1)
        assert request.message == "Answer question 1"
        assert request.output == "What is the deadline?"
        ask = steps_of(run)["ask"]
        assert (ask.status, ask.wait, ask.iteration) == ("waiting", "reply", 1)
        assert run.status == "running"

    def test_the_inbox_lists_it_for_operators_approvers_admins_and_the_starter_only(
            self, operator, approver, admin_user, outsider, save_workflow):
        starter = member("sam")  # in no group (left them all after starting it): may not see the run any more
        run = start(save_workflow, None)
        run.started_by = starter
        run.save(update_fields=["started_by"])
        listed = {user.username: [(a.run_id, a.step) for a in approvals_for_user(user)]
                  for user in (operator, approver, admin_user, outsider, starter)}
        assert listed == {"olive": [(run.pk, "ask")], "april": [(run.pk, "ask")], "adam": [(run.pk, "ask")],
                          "oscar": [], "sam": []}
        # every page counts these for its badge: the workflow's text (up to 1 MiB) is not read for it
        assert "source" in approvals_for_user(operator)[0].run.version.get_deferred_fields()

    def test_the_starter_or_a_named_groups_member_in_no_console_group_may_not_answer(self, operator,
                                                                                      save_workflow):
        """Who cannot see the run (the console refuses them every page of it) cannot answer it by the CLI
        either, nor see it in `forge approvals`, which shows the iteration's output."""
        Group.objects.create(name="Finance")
        finance_only = member("fred", "Finance")
        run = start(save_workflow, operator, FINANCE)
        operator.groups.clear()  # the starter left the Operators after starting it
        operator = type(operator).objects.get(pk=operator.pk)
        approval = pending(run)
        before = snapshot(run, approval)
        for user in (operator, finance_only):
            assert approvals_for_user(user) == []
            with pytest.raises(PermissionDenied, match="in no group of this console"):
                services.reply_give(user=user, approval=approval, text="hello")
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(SystemExit) as exit_:
            call_command("forge", "--user", "fred", "reply", str(run.pk), "ask", "hello", stdout=out, stderr=err)
        assert exit_.value.code == 4 and "in no group of this console" in err.getvalue()  # refused
        assert snapshot(run, approval) == before

    def test_a_request_naming_finance_is_listed_for_finance_and_admins_not_for_approvers(
            self, operator, approver, admin_user, save_workflow):
        Group.objects.create(name="Finance")
        finance = member("fran", "Finance", "Approvers")  # a console group too, to see the run at all
        run = start(save_workflow, operator, FINANCE)
        assert [a.step for a in approvals_for_user(finance)] == ["ask"]
        assert [a.step for a in approvals_for_user(admin_user)] == ["ask"]
        assert approvals_for_user(approver) == []
        # the operator started it: a reply is not an approval, so the starter may answer
        assert [a.step for a in approvals_for_user(operator)] == ["ask"]


class TestAnswering:
    def test_a_reply_starts_the_next_iteration_which_sees_it_and_the_answers_row_keeps_it(
            self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        services.reply_give(user=approver, approval=pending(run), text="Friday noon")
        answered = Approval.objects.get(run=run, step="ask", iteration=1)
        assert (answered.status, answered.reply, answered.decided_by) == ("answered", "Friday noon", approver)
        assert answered.decided_at is not None
        ask = steps_of(run)["ask"]
        assert (ask.status, ask.wait, ask.iteration) == ("waiting", "reply", 2)
        calls = step_iterations(run, "ask")
        assert [(c["name"], c["outputs"], c.get("reply")) for c in calls] == [
            ("ask_iter_1", {"question": "deadline"}, "Friday noon"), ("ask_iter_2", {"question": "sign_off"}, None)]
        assert calls[1]["command"] == 'question 2 after ["Friday noon"]'
        second = pending(run)
        assert (second.iteration, second.output) == (2, "Who signs it off?")
        history = run_report(run)["steps"]["ask"]
        assert history["history"] == ["ask_iter_1", "ask_iter_2"]

    def test_two_replies_finish_the_loop_and_the_run_with_every_answer_in_order(
            self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        services.reply_give(user=approver, approval=pending(run), text="Friday noon")
        services.reply_give(user=operator, approval=pending(run), text="Dana")
        run.refresh_from_db()
        assert run.status == "completed"
        assert steps_of(run)["ask"].outputs == {"question": "done"}
        assert [(a.iteration, a.reply, a.decided_by.username) for a in replies_so_far(run, "ask")] == [
            (1, "Friday noon", "april"), (2, "Dana", "olive")]
        report = run_report(run)["steps"]["ask"]
        assert (report["history"], report["iterations"]) == (["ask_iter_1", "ask_iter_2", "ask_iter_3"], 3)

    def test_the_audit_has_who_the_length_and_the_digest_but_never_the_text(self, operator, approver,
                                                                            save_workflow):
        run = start(save_workflow, operator)
        text = "Friday noon, üntil the café closes"
        services.reply_give(user=approver, approval=pending(run), text=text)
        rows = list(AuditEvent.objects.filter(run_id=run.pk, code__in=[
            "forge.approval.reply_requested", "forge.approval.answered"]).order_by("id"))
        assert [(r.code, r.actor, r.actor_id, r.step) for r in rows] == [
            ("forge.approval.reply_requested", "april", approver.pk, "ask"),
            ("forge.approval.answered", "april", approver.pk, "ask")]
        for row in rows:
            assert {k: row.detail[k] for k in ("length", "sha256")} == digest(text)
        everything = json.dumps(list(AuditEvent.objects.filter(run_id=run.pk).values("detail", "target")),
                                ensure_ascii=False)
        assert "Friday" not in everything and "café" not in everything

    def test_the_system_may_reply(self, operator, save_workflow):
        run = start(save_workflow, operator)
        services.reply_give(user=None, approval=pending(run), text="from the server")
        answered = Approval.objects.get(run=run, iteration=1)
        assert (answered.status, answered.decided_by) == ("answered", None)
        assert AuditEvent.objects.get(run_id=run.pk, code="forge.approval.answered").actor == "system"


class TestRefusals:
    @pytest.mark.parametrize("text, message", [
        ("", "needs some text"),
        ("  \n\t ", "needs some text"),
        ("x" * 65537, "at most 65,536 bytes"),
        ("é" * 32769, "at most 65,536 bytes"),  # 65,538 bytes of UTF-8 in 32,769 characters
        ("nul \0 inside", "NUL"),
        ("half a pair \ud800", "must be UTF-8"),  # PostgreSQL could not store it
    ])
    def test_an_empty_or_too_long_reply_is_refused_and_changes_nothing(self, operator, approver, save_workflow,
                                                                         text, message):
        run = start(save_workflow, operator)
        approval = pending(run)
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match=message):
            services.reply_give(user=approver, approval=approval, text=text)
        assert snapshot(run, approval) == before

    def test_a_reply_of_exactly_64_kib_is_taken(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        services.reply_give(user=approver, approval=pending(run), text="x" * 65536)
        assert len(Approval.objects.get(run=run, iteration=1).reply) == 65536

    def test_a_second_answer_to_the_same_request_is_refused(self, operator, approver, admin_user, save_workflow):
        run = start(save_workflow, operator)
        first = pending(run)
        services.reply_give(user=approver, approval=first, text="Friday noon")
        before = snapshot(run, first)
        with pytest.raises(services.ServiceError, match="already answered"):
            services.reply_give(user=admin_user, approval=first, text="Monday")
        assert snapshot(run, first) == before
        assert Approval.objects.get(pk=first.pk).reply == "Friday noon"

    def test_a_reply_already_in_the_inbox_but_not_yet_taken_refuses_a_second(self, operator, approver, admin_user,
                                                                               save_workflow, monkeypatch):
        run = start(save_workflow, operator)
        approval = pending(run)
        monkeypatch.setattr(services, "enqueue_advance", lambda run_id: None)  # no worker takes it yet
        services.reply_give(user=approver, approval=approval, text="Friday noon")  # queued, not yet advanced
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match="already been answered; the run is recording"):
            services.reply_give(user=admin_user, approval=approval, text="Monday")
        assert snapshot(run, approval) == before

    def test_people_who_may_not_answer_are_refused_and_nothing_changes(self, operator, outsider, save_workflow):
        run = start(save_workflow, operator)
        approval = pending(run)
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="in no group of this console"):
            services.reply_give(user=outsider, approval=approval, text="hello")
        assert snapshot(run, approval) == before

    def test_an_approver_outside_the_named_group_is_refused(self, operator, approver, save_workflow):
        run = start(save_workflow, operator, FINANCE)
        approval = pending(run)
        before = snapshot(run, approval)
        with pytest.raises(PermissionDenied, match="member of Finance or the run's starter"):
            services.reply_give(user=approver, approval=approval, text="hello")
        assert snapshot(run, approval) == before
        Group.objects.create(name="Finance")
        with pytest.raises(PermissionDenied, match="member of Finance"):
            services.reply_give(user=member("fran", "Approvers"), approval=approval, text="hello")
        assert snapshot(run, approval) == before

    def test_a_reply_to_an_ended_run_is_refused(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        approval = pending(run)
        services.run_cancel(user=operator, run=run)
        run.refresh_from_db()
        assert run.status == "cancelled"
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match=r"run \d+ has ended \(cancelled\)"):
            services.reply_give(user=approver, approval=approval, text="too late")
        assert snapshot(run, approval) == before

    def test_a_reply_after_the_request_timed_out_is_not_taken(self, operator, approver, save_workflow, clock):
        run = start(save_workflow, operator, TIMED)
        assert (pending(run).expires_at - clock()).total_seconds() == pytest.approx(60, abs=0.01)
        clock.advance(61)  # the 60 s passed while no worker advanced the run: the timeout is due, unprocessed
        with pytest.raises(services.ServiceError, match="timed out at .* before the reply"):
            services.reply_give(user=approver, approval=pending(run), text="late")
        run.refresh_from_db()
        assert (steps_of(run)["ask"].status, run.status) == ("timed_out", "failed")
        expired = Approval.objects.get(run=run)
        assert (expired.status, expired.reply) == (Approval.EXPIRED, "")
        assert not RunInput.objects.filter(run=run, key__startswith="reply:").exists()
        assert not AuditEvent.objects.filter(run_id=run.pk, code__in=[
            "forge.approval.reply_requested", "forge.approval.answered"]).exists()

    def test_deciding_a_reply_request_is_refused_with_how_to_answer_it(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        approval = pending(run)
        before = snapshot(run, approval)
        with pytest.raises(services.ServiceError, match="answer it with a reply"):
            services.approval_decide(user=approver, approval=approval, decision="approve")
        assert snapshot(run, approval) == before


class TestCommandLine:
    def forge(self, *argv, stdin=None):
        out, err = io.StringIO(), io.StringIO()
        code = 0
        try:
            call_command("forge", *argv, stdout=out, stderr=err)
        except SystemExit as exc:
            code = exc.code
        return code, out.getvalue(), err.getvalue()

    def test_forge_approvals_lists_the_request_with_the_iterations_output(self, operator, save_workflow):
        run = start(save_workflow, operator)
        code, out, _ = self.forge("approvals", "--json")
        rows = json.loads(out)
        assert code == 0
        assert [(r["run"], r["step"], r["kind"], r["iteration"], r["output"]) for r in rows] == [
            (run.pk, "ask", "reply", 1, "What is the deadline?")]
        code, out, _ = self.forge("approvals")
        assert f"run {run.pk} interview / ask (reply, iteration 1): Answer question 1" in out
        assert "output: What is the deadline?" in out

    def test_forge_reply_answers_and_a_second_answer_to_the_same_iteration_exits_2(self, operator, save_workflow):
        run = start(save_workflow, operator)
        code, out, _ = self.forge("reply", str(run.pk), "ask", "Friday noon")
        assert (code, out.strip()) == (0, f"run {run.pk} / ask: replied to iteration 1 (11 bytes)")
        assert Approval.objects.get(run=run, iteration=1).reply == "Friday noon"
        code, _, err = self.forge("reply", str(run.pk), "ask", "Monday", "--iteration", "1")
        assert code == 2
        assert "already answered" in err
        assert Approval.objects.get(run=run, iteration=1).reply == "Friday noon"

    def test_forge_reply_acts_as_the_user_named_after_the_command_too(self, operator, approver, save_workflow):
        run = start(save_workflow, operator)
        code, _, err = self.forge("reply", str(run.pk), "ask", "Friday noon", "--user", approver.username)
        assert (code, err) == (0, "")
        answered = Approval.objects.get(run=run, iteration=1)
        assert (answered.reply, answered.decided_by) == ("Friday noon", approver)

    def test_forge_reply_reads_a_file(self, operator, save_workflow, tmp_path):
        run = start(save_workflow, operator)
        answer = tmp_path / "answer.txt"
        answer.write_text("Friday noon\nand not later\n", encoding="utf-8")
        code, _, _ = self.forge("reply", str(run.pk), "ask", "--file", str(answer))
        assert code == 0
        assert Approval.objects.get(run=run, iteration=1).reply == "Friday noon\nand not later\n"

    @pytest.mark.parametrize("argv, message", [
        (["ask"], "give the reply as TEXT or with --file"),
        (["ask", "text", "--file", "x"], "give the reply as TEXT or with --file"),
        (["ask", "--file", "/nonexistent/answer.txt"], "cannot read /nonexistent/answer.txt"),
        (["ask", ""], "needs some text"),
        (["summary", "hello"], "has no pending reply request"),
    ])
    def test_bad_replies_exit_2_with_a_clear_error_and_change_nothing(self, operator, save_workflow, argv,
                                                                      message):
        run = start(save_workflow, operator)
        approval = pending(run)
        before = snapshot(run, approval)
        code, _, err = self.forge("reply", str(run.pk), *argv)
        assert code == 2
        assert message in err
        assert snapshot(run, approval) == before

    def test_forge_run_with_replies_answers_in_order_and_completes(self, save_workflow, tmp_path):
        path = tmp_path / "interview.yaml"
        path.write_text(INTERVIEW, encoding="utf-8")
        code, out, err = self.forge("run", str(path), "--wait", "--json", "--reply", "ask=Friday",
                                    "--reply", "ask=Dana")
        result = json.loads(out)
        assert (code, result["status"]) == (0, "completed"), err
        assert result["steps"]["ask"]["history"] == ["ask_iter_1", "ask_iter_2", "ask_iter_3"]
        assert [a.reply for a in Approval.objects.filter(kind="reply").order_by("iteration")] == ["Friday", "Dana"]

    def test_forge_run_with_too_few_replies_pauses_with_exit_3(self, save_workflow, tmp_path):
        path = tmp_path / "interview.yaml"
        path.write_text(INTERVIEW, encoding="utf-8")
        code, out, _ = self.forge("run", str(path), "--wait", "--json", "--reply", "ask=Friday")
        result = json.loads(out)
        assert (code, result["status"]) == (3, "paused")
        assert [(a["step"], a["kind"], a["status"]) for a in result["approvals"]] == [
            ("ask", "reply", "answered"), ("ask", "reply", "pending")]

    def test_forge_run_with_an_empty_reply_exits_2_before_anything_is_saved(self, tmp_path):
        path = tmp_path / "interview.yaml"
        path.write_text(INTERVIEW, encoding="utf-8")
        code, _, err = self.forge("run", str(path), "--wait", "--reply", "ask=")
        assert code == 2
        assert "needs some text" in err
        assert not StepResult.objects.exists()

    def test_forge_run_deciding_a_reply_request_exits_2(self, tmp_path):
        path = tmp_path / "interview.yaml"
        path.write_text(INTERVIEW, encoding="utf-8")
        code, _, err = TestCommandLine.forge(self, "run", str(path), "--wait", "--decide", "ask=approve")
        assert code == 2
        assert "asks for a reply, not a decision" in err
        assert Approval.objects.get(kind="reply").status == Approval.PENDING


def test_forge_run_checks_a_reply_request_that_comes_while_it_reads_whether_the_run_is_paused(
        operator, save_workflow, monkeypatch):
    """Under load the request can appear between the wait's reads: it must still be checked (exit 2), never
    taken for a pause (exit 3). The request is hidden until the wait asks whether the run is paused."""
    from engine.terminal import UsageError
    from forge.runs.management.commands import forge as command
    run = start(save_workflow, operator)
    request = pending(run)
    Approval.objects.filter(pk=request.pk).update(status="not yet")
    real = command.is_paused

    def request_arrives(checked_run):
        Approval.objects.filter(pk=request.pk).update(status=Approval.PENDING)
        return real(checked_run)

    monkeypatch.setattr(command, "is_paused", request_arrives)
    with pytest.raises(UsageError, match="asks for a reply, not a decision"):
        command.Command()._wait(run, {"ask": "approve"}, {}, timeout=30)
