"""The API's approvals operations: my inbox, one approval, deciding it and answering a reply request, each through
the services the console calls, each refusal a problem that changes nothing."""

from __future__ import annotations

import pytest

from forge.accounts.tokens import token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.runs import services
from forge.runs.models import Approval, RunInput
from tests.forge.api.runs_api import TOKEN, as_, call, problem
from tests.forge.conftest import fast_forward, member, steps_of

pytestmark = pytest.mark.django_db

SIGN_OFF = """
name: sign_off_payment
args:
  api_token: {type: string, default: none-given}
steps:
  - id: prepare
    agent: mock
    command: prepare the payment
    mock: {outputs: {amount: 10}}
  - id: sign_off
    approval: required
    approval_message: "Pay with ${args.api_token}?"
    depends_on: [prepare]
  - id: pay
    agent: mock
    command: pay
    depends_on: [sign_off]
    mock: {outputs: {paid: true}}
"""

INTERVIEW = """
name: interview
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration}"
    approval_message: "Answer question ${loop.iteration}"
    loop: {max_iterations: 2, gate: reply}
    mock:
      sequence:
        - {stdout: "What is the deadline?", outputs: {question: deadline}}
        - {stdout: "Thanks.", outputs: {question: done}}
"""


@pytest.fixture
def asking(save_workflow, operator):
    """A run waiting on its sign_off approval, its secret-reading argument in the approval's message."""
    return fast_forward(services.run_start(user=operator, version=save_workflow(SIGN_OFF), args={"api_token": TOKEN}))


@pytest.fixture
def approval(asking):
    return Approval.objects.get(run=asking, status=Approval.PENDING)


@pytest.fixture
def reply_request(save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(INTERVIEW)))
    return Approval.objects.get(run=run, status=Approval.PENDING)


def unchanged(approval: Approval):
    """What a refused decision must leave as it was."""
    approval.refresh_from_db()
    return (approval.status, approval.decision, RunInput.objects.filter(run_id=approval.run_id).count(),
            AuditEvent.objects.count())


class TestInbox:
    def test_an_approver_sees_what_they_may_decide(self, client, approver, approval):
        body = call(as_(client, approver), "get", "/api/v1/approvals").json()
        assert [item["id"] for item in body["results"]] == [approval.pk]
        item = body["results"][0]
        assert (item["run"], item["step"], item["kind"], item["status"]) == (approval.run_id, "sign_off",
                                                                             "approval", "pending")
        assert item["workflow"] == "sign_off_payment" and set(item["options"]) == {"approve", "reject"}
        assert item["message"] == "Pay with [redacted]?"

    def test_an_operator_sees_reply_requests_not_approvals(self, client, operator, approval, reply_request):
        body = call(as_(client, operator), "get", "/api/v1/approvals").json()
        assert [item["id"] for item in body["results"]] == [reply_request.pk]

    def test_an_outsider_is_refused(self, client, outsider, approval):
        problem(call(as_(client, outsider), "get", "/api/v1/approvals"), 403, "forbidden")

    def test_the_wrong_method_is_405(self, client, approver):
        problem(call(as_(client, approver), "post", "/api/v1/approvals", {}), 405)

    def test_a_bad_cursor_is_a_400_problem(self, client, approver, approval):
        problem(call(as_(client, approver), "get", "/api/v1/approvals?cursor=bad"), 400)

    def test_a_page_of_approvals_costs_a_fixed_number_of_queries(self, client, approver, operator, save_workflow,
                                                                 django_assert_max_num_queries):
        version = save_workflow(SIGN_OFF)
        runs = [fast_forward(services.run_start(user=operator, version=version)) for _ in range(12)]
        assert Approval.objects.filter(status=Approval.PENDING).count() == len(runs)
        as_(client, approver)
        call(client, "get", "/api/v1/approvals?limit=1")
        with django_assert_max_num_queries(5) as few:  # the session, its user, their groups, the inbox, its page
            assert len(call(client, "get", "/api/v1/approvals?limit=2").json()["results"]) == 2
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(call(client, "get", "/api/v1/approvals").json()["results"]) == 12


class TestOne:
    def test_anyone_who_sees_runs_reads_an_approval(self, client, operator, approval):
        body = call(as_(client, operator), "get", f"/api/v1/approvals/{approval.pk}").json()
        assert body["id"] == approval.pk and body["status"] == "pending" and TOKEN not in str(body)

    @pytest.mark.parametrize("url", ["/api/v1/approvals/999999", "/api/v1/approvals/abc",
                                     f"/api/v1/approvals/{2**70}"])
    def test_an_unknown_approval_is_a_404_problem(self, client, approver, url):
        problem(call(as_(client, approver), "get", url), 404)

    def test_an_outsider_is_refused_whether_or_not_it_exists(self, client, outsider, approval):
        as_(client, outsider)
        problem(call(client, "get", f"/api/v1/approvals/{approval.pk}"), 403, "forbidden")
        problem(call(client, "get", "/api/v1/approvals/999999"), 403, "forbidden")


class TestDecide:
    def test_an_approver_approves_and_the_run_goes_on(self, client, approver, approval):
        response = call(as_(client, approver), "post", f"/api/v1/approvals/{approval.pk}/decision",
                        {"decision": "approve", "comment": "fine"})
        assert response.status_code == 202, response.content
        assert response.json()["id"] == approval.pk
        event = AuditEvent.objects.get(code=codes.APPROVAL_DECISION_REQUESTED, run_id=approval.run_id)
        assert event.detail["decision"] == "approve" and event.detail["comment"] == "fine"
        run = fast_forward(approval.run)
        approval.refresh_from_db()
        assert (approval.status, approval.decided_by, approval.comment) == ("approved", approver, "fine")
        assert run.status == "completed" and steps_of(run)["pay"].status == "completed"
        shown = call(client, "get", f"/api/v1/approvals/{approval.pk}").json()
        assert (shown["status"], shown["decided_by"], shown["decision"]) == ("approved", "april", "approve")

    @pytest.mark.parametrize("body", [{"decision": "maybe"}, {"decision": 1}, {}, {"decision": "approve", "by": "x"},
                                      {"decision": "approve", "comment": "c" * 2001}, [], "approve"])
    def test_a_bad_body_decides_nothing(self, client, approver, approval, body):
        before = unchanged(approval)
        problem(call(as_(client, approver), "post", f"/api/v1/approvals/{approval.pk}/decision", body), 400)
        assert unchanged(approval) == before

    def test_a_decision_the_approval_does_not_offer_is_refused(self, client, approver, approval):
        before = unchanged(approval)
        problem(call(as_(client, approver), "post", f"/api/v1/approvals/{approval.pk}/decision",
                     {"decision": "retry"}), 422)
        assert unchanged(approval) == before

    @pytest.mark.parametrize("who", ["operator", "outsider"])
    def test_who_may_not_decide_is_refused(self, client, request, approval, who):
        before = unchanged(approval)
        problem(call(as_(client, request.getfixturevalue(who)), "post", f"/api/v1/approvals/{approval.pk}/decision",
                     {"decision": "approve"}), 403, "forbidden")
        assert unchanged(approval) == before

    def test_a_token_without_approvals_decide_is_refused_for_its_scope(self, client, approver, approval):
        _, secret = token_create(user=approver, name="reader", scopes=["runs:read"])
        before = unchanged(approval)
        problem(call(client, "post", f"/api/v1/approvals/{approval.pk}/decision", {"decision": "approve"},
                     authorization=f"Bearer {secret}"), 403, "scope-missing")
        assert unchanged(approval) == before
        _, deciding = token_create(user=approver, name="decider", scopes=["runs:read", "approvals:decide"])
        decided = call(client, "post", f"/api/v1/approvals/{approval.pk}/decision", {"decision": "approve"},
                       authorization=f"Bearer {deciding}")
        assert decided.status_code == 202, decided.content

    def test_the_starter_may_not_approve_their_own_run(self, client, approval, settings):
        settings.FORGE_ALLOW_SELF_APPROVAL = False
        both = member("bea", "Operators", "Approvers")
        approval.run.started_by = both
        approval.run.save(update_fields=["started_by"])
        before = unchanged(approval)
        problem(call(as_(client, both), "post", f"/api/v1/approvals/{approval.pk}/decision",
                     {"decision": "approve"}), 403)
        assert unchanged(approval) == before

    def test_a_second_decision_is_refused(self, client, approver, admin_user, approval):
        call(as_(client, approver), "post", f"/api/v1/approvals/{approval.pk}/decision", {"decision": "reject"})
        before = unchanged(approval)
        problem(call(as_(client, admin_user), "post", f"/api/v1/approvals/{approval.pk}/decision",
                     {"decision": "approve"}), 409)
        assert unchanged(approval) == before

    def test_a_reply_request_is_not_decided(self, client, admin_user, reply_request):
        before = unchanged(reply_request)
        problem(call(as_(client, admin_user), "post", f"/api/v1/approvals/{reply_request.pk}/decision",
                     {"decision": "approve"}), 422)
        assert unchanged(reply_request) == before

    def test_an_unknown_approval_and_the_wrong_method(self, client, approver, approval):
        as_(client, approver)
        problem(call(client, "post", "/api/v1/approvals/999999/decision", {"decision": "approve"}), 404)
        problem(call(client, "get", f"/api/v1/approvals/{approval.pk}/decision"), 405)


class TestADecidingToken:
    """approvals:decide includes reading the approvals its owner may decide or answer, and no run."""

    @staticmethod
    def bearer(user, *scopes: str) -> dict:
        return {"authorization": f"Bearer {token_create(user=user, name='bot', scopes=list(scopes))[1]}"}

    def test_it_lists_reads_and_decides_then_reads_its_decision_back(self, client, approver, approval):
        token = self.bearer(approver, "approvals:decide")
        inbox = call(client, "get", "/api/v1/approvals", **token)
        assert inbox.status_code == 200 and [item["id"] for item in inbox.json()["results"]] == [approval.pk]
        read = call(client, "get", f"/api/v1/approvals/{approval.pk}", **token)
        assert read.status_code == 200 and read.json()["status"] == "pending" and TOKEN not in read.content.decode()
        decided = call(client, "post", f"/api/v1/approvals/{approval.pk}/decision", {"decision": "approve"}, **token)
        assert decided.status_code == 202, decided.content
        assert AuditEvent.objects.get(code=codes.APPROVAL_DECISION_REQUESTED, run_id=approval.run_id).token_id
        assert fast_forward(approval.run).status == "completed"
        shown = call(client, "get", f"/api/v1/approvals/{approval.pk}", **token).json()
        assert (shown["status"], shown["decided_by"]) == ("approved", "april")

    def test_it_reads_no_run(self, client, approver, approval):
        token = self.bearer(approver, "approvals:decide")
        for url in (f"/api/v1/runs/{approval.run_id}", "/api/v1/runs", f"/api/v1/runs/{approval.run_id}/events"):
            refused = problem(call(client, "get", url, **token), 403, "scope-missing")
            assert refused["scope"] == "runs:read" and "runs:read or runs:write" in refused["detail"], url

    def test_it_reads_no_approval_its_owner_may_not_decide(self, client, approver, operator, save_workflow):
        run = fast_forward(services.run_start(user=operator, version=save_workflow(
            SIGN_OFF.replace("    approval: required\n", "    approval: required\n    approvers: [Finance]\n"))))
        theirs = Approval.objects.get(run=run, status=Approval.PENDING)
        assert call(as_(client, approver), "get", f"/api/v1/approvals/{theirs.pk}").status_code == 200  # a session
        client.logout()
        token = self.bearer(approver, "approvals:decide")
        assert call(client, "get", "/api/v1/approvals", **token).json()["results"] == []
        problem(call(client, "get", f"/api/v1/approvals/{theirs.pk}", **token), 404, "not-found")
        before = unchanged(theirs)
        problem(call(client, "post", f"/api/v1/approvals/{theirs.pk}/decision", {"decision": "approve"}, **token),
                404, "not-found")
        assert unchanged(theirs) == before

    def test_it_answers_a_reply_request_its_owner_may_answer(self, client, operator, reply_request):
        token = self.bearer(operator, "approvals:decide")
        assert call(client, "get", f"/api/v1/approvals/{reply_request.pk}", **token).status_code == 200
        answered = call(client, "post", f"/api/v1/approvals/{reply_request.pk}/reply", {"text": "Friday"}, **token)
        assert answered.status_code == 202, answered.content

    def test_its_owner_out_of_every_group_reads_nothing(self, client, approver, approval):
        token = self.bearer(approver, "approvals:decide")
        approver.groups.clear()
        problem(call(client, "get", "/api/v1/approvals", **token), 403, "forbidden")
        problem(call(client, "get", f"/api/v1/approvals/{approval.pk}", **token), 403, "forbidden")


class TestReply:
    def test_the_starter_answers_and_the_loop_goes_on(self, client, operator, reply_request):
        response = call(as_(client, operator), "post", f"/api/v1/approvals/{reply_request.pk}/reply",
                        {"text": "  Friday, 17:00\n"})
        assert response.status_code == 202, response.content
        assert AuditEvent.objects.filter(code=codes.APPROVAL_REPLY_REQUESTED, run_id=reply_request.run_id).exists()
        fast_forward(reply_request.run)
        reply_request.refresh_from_db()
        assert (reply_request.status, reply_request.reply) == ("answered", "  Friday, 17:00\n")
        calls = call(client, "get", f"/api/v1/runs/{reply_request.run_id}/steps/ask/outputs").json()["calls"]
        assert [(c["name"], c["stdout"], c["reply"]) for c in calls] == [
            ("ask_iter_1", "What is the deadline?", "  Friday, 17:00\n"), ("ask_iter_2", "Thanks.", None)]
        assert calls[0]["outputs"] == {"question": "deadline"} and calls[0]["reply_by"] == "olive"

    @pytest.mark.parametrize("body, status", [({"text": 5}, 400), ({}, 400), ({"text": "x", "as": "bob"}, 400),
                                              ({"text": "x" * 65537}, 400), ({"text": ""}, 422),
                                              ({"text": "é" * 40000}, 422)])  # 80,000 bytes
    def test_a_bad_reply_changes_nothing(self, client, operator, reply_request, body, status):
        before = unchanged(reply_request)
        problem(call(as_(client, operator), "post", f"/api/v1/approvals/{reply_request.pk}/reply", body), status)
        assert unchanged(reply_request) == before

    def test_an_approval_takes_no_reply(self, client, approver, approval):
        before = unchanged(approval)
        problem(call(as_(client, approver), "post", f"/api/v1/approvals/{approval.pk}/reply", {"text": "yes"}), 422)
        assert unchanged(approval) == before

    def test_an_outsider_an_unknown_request_and_the_wrong_method(self, client, outsider, operator, reply_request):
        before = unchanged(reply_request)
        problem(call(as_(client, outsider), "post", f"/api/v1/approvals/{reply_request.pk}/reply", {"text": "x"}), 403)
        assert unchanged(reply_request) == before
        as_(client, operator)
        problem(call(client, "post", "/api/v1/approvals/999999/reply", {"text": "x"}), 404)
        problem(call(client, "put", f"/api/v1/approvals/{reply_request.pk}/reply", {"text": "x"}), 405)
