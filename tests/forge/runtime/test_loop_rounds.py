"""What the runtime's rounds do with seed 002's loops: a review loop's fix call goes to its fix agent (governed,
dispatched and charged as that agent), a reply the run no longer waits for is audited as too late, and reply
requests and answers wake the approvals inbox.

Transactional database, so runs advance on commit as on a cluster (django-q2's sync mode).
"""

import hashlib
import json

import pytest

from engine.interpreter import ReplyGiven
from forge import live
from forge.audit.models import AuditEvent
from forge.governance.models import Agent, TokenEvent
from forge.runs import services
from forge.runs.models import Approval, RunInput
from forge.runs.selectors import step_iterations
from forge.runtime import inbox
from forge.runtime.rounds import advance
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REVIEW = """
name: reviewed_change
steps:
  - id: review
    agent: reviewer
    command: "Review the change."
    loop:
      max_cycles: 2
      on_request_changes:
        fix_command: "Fix what the review asked: ${loop.review}"
        fix_agent: fixer
    mock:
      tokens: 10
      cost: 0.5
      sequence:
        - {stdout: "VERDICT: REQUEST_CHANGES\\nthe tests are missing"}
        - {stdout: "VERDICT: APPROVED"}
"""

INTERVIEW = """
name: interview
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration}"
    loop: {max_iterations: 3, gate: reply}
  - id: after
    agent: mock
    command: "after"
    depends_on: [ask]
"""


def start(user, save_workflow, source):
    run = services.run_start(user=user, version=save_workflow(source))
    run.refresh_from_db()
    return run


@pytest.fixture
def review_agents(db):
    return Agent.objects.create(name="reviewer", provider="mock"), Agent.objects.create(name="fixer", provider="mock")


class TestFixAgent:
    def test_the_fix_call_is_governed_and_charged_as_the_fix_agent(self, operator, save_workflow, review_agents):
        run = start(operator, save_workflow, REVIEW)
        assert run.status == "completed"
        calls = step_iterations(run, "review")
        assert [(c["name"], c["agent"]) for c in calls] == [
            ("review", "reviewer"), ("review_fix_1", "fixer"), ("review_2", "reviewer")]
        assert calls[1]["command"].startswith("Fix what the review asked: VERDICT: REQUEST_CHANGES")
        allowed = AuditEvent.objects.filter(code="forge.governance.allowed", run_id=run.pk).order_by("id")
        assert [(e.target, e.detail["iteration"]) for e in allowed] == [
            ("agent:reviewer", 1), ("agent:fixer", 2), ("agent:reviewer", 3)]
        spent = TokenEvent.objects.filter(run_id=run.pk).order_by("iteration")
        assert [(t.iteration, t.agent, t.tokens) for t in spent] == [(1, "reviewer", 10), (2, "fixer", 10),
                                                                     (3, "reviewer", 10)]

    def test_a_disabled_fix_agent_blocks_the_fix_not_the_review(self, operator, save_workflow, review_agents):
        _, fixer = review_agents
        fixer.enabled = False
        fixer.save()
        run = start(operator, save_workflow, REVIEW)
        review = steps_of(run)["review"]
        assert (review.status, review.error_code) == ("failed", "agent_disabled")
        blocked = AuditEvent.objects.get(code="forge.governance.blocked", run_id=run.pk)
        assert blocked.target == "agent:fixer"
        allowed = AuditEvent.objects.filter(code="forge.governance.allowed", run_id=run.pk)
        assert [e.target for e in allowed] == ["agent:reviewer"]


class TestRepliesInRounds:
    def test_a_reply_for_a_step_that_no_longer_waits_is_audited_too_late_without_its_text(
            self, operator, save_workflow):
        run = start(operator, save_workflow, INTERVIEW)
        text = "an answer nobody waits for"
        RunInput.objects.create(run=run, key=inbox.reply("nobody"),
                                event=ReplyGiven("after", text, by="olive", by_id=operator.pk).to_json())
        advance(run.pk)
        late = AuditEvent.objects.get(code="forge.approval.reply_too_late", run_id=run.pk)
        assert (late.step, late.actor, late.actor_id) == ("after", "olive", operator.pk)
        assert late.detail["length"] == len(text)
        assert late.detail["sha256"] == hashlib.sha256(text.encode()).hexdigest()
        assert "nobody waits" not in json.dumps(late.detail)
        assert Approval.objects.get(run=run).status == Approval.PENDING
        assert steps_of(run)["ask"].status == "waiting"

    def test_a_reply_request_and_its_answer_wake_the_approvals_inbox(self, operator, save_workflow, monkeypatch,
                                                                      settings):
        settings.REDIS_URL = ""  # the recorder below stands in for the live layer
        woken = []
        monkeypatch.setattr(live, "wake", lambda run_id, **kinds: woken.append((run_id, kinds["approvals"])))
        run = start(operator, save_workflow, INTERVIEW)
        assert (run.pk, True) in woken
        woken.clear()
        services.reply_give(user=operator, approval=Approval.objects.get(run=run, status="pending"), text="go on")
        assert (run.pk, True) in woken
        assert Approval.objects.get(run=run, iteration=1).status == Approval.ANSWERED

    def test_the_request_is_audited_without_a_message_that_could_quote_replies(self, operator, save_workflow):
        run = start(operator, save_workflow, INTERVIEW.replace(
            "    loop: {max_iterations: 3, gate: reply}\n",
            "    loop: {max_iterations: 3, gate: reply}\n    approval_message: \"You said: ${loop.reply}\"\n"))
        services.reply_give(user=operator, approval=Approval.objects.get(run=run, status="pending"),
                            text="a private answer")
        second = Approval.objects.get(run=run, status="pending")
        assert second.message == "You said: a private answer"  # kept with the run
        requested = AuditEvent.objects.filter(code="forge.approval.requested", run_id=run.pk)
        assert [e.detail for e in requested] == [{"kind": "reply", "iteration": 1}, {"kind": "reply", "iteration": 2}]
