"""A loop's reply request (spec section 9) in the console: the inbox card with the iteration's output, the replies
so far, who may answer and a text box; the run page's card and sentence; the reply's POST, whose every refusal
says why on the card and changes nothing."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from forge.runs import services
from forge.audit.models import AuditEvent
from forge.runs.reads.attempts import step_times
from forge.runs.models import Approval, RunInput
from forge.runs.sentences import why_not_running
from tests.forge.conftest import fast_forward, member, steps_of

pytestmark = pytest.mark.django_db
INTERVIEW = """
name: interview
steps:
  - id: ask
    agent: mock
    command: "Question ${loop.iteration}; answers so far: ${loop.replies}"
    approval_message: "Answer question ${loop.iteration}"
    mock:
      sequence:
        - {stdout: "What is the deadline?"}
        - {stdout: "Who signs it off?"}
        - {stdout: "DONE", outputs: {done: true}}
    outputs: {done: {type: boolean}}
    loop: {max_iterations: 3, until: "outputs.done == true", gate: reply}
"""
HTMX = {"HX-Request": "true"}


@pytest.fixture
def interview(save_workflow, operator):
    return fast_forward(services.run_start(user=operator, version=save_workflow(INTERVIEW)))


def pending(run) -> Approval:
    return Approval.objects.get(run=run, status=Approval.PENDING)


def reply(client, approval, text, **extra):
    return client.post(reverse("console:reply", args=[approval.pk]),
                       {"text": text, "place": "inbox", "next": "/approvals/"}, **extra)


def test_the_inbox_shows_a_reply_request_with_its_output_and_who_may_answer(client, interview, approver):
    asked = pending(interview)
    assert asked.kind == "reply" and asked.iteration == 1
    client.force_login(approver)
    html = client.get(reverse("console:approvals")).content.decode()
    card = html[html.index(f'data-approval="{asked.pk}"'):]
    assert "Iteration 1 of 3" in card and "Answer question 1" in card and "What is the deadline?" in card
    assert "Who may answer: Operators or Approvers, or the person who started the run (olive)" in card
    assert "None yet: this is the first." in card
    assert re.search(r'<textarea[^>]*name="text"[^>]*maxlength="65536" required', card)
    assert "Send reply" in card


def test_the_run_page_says_the_step_waits_for_a_reply(client, interview, approver):
    client.force_login(approver)
    html = client.get(reverse("console:run", args=[interview.pk])).content.decode()
    assert "waiting for a reply from Operators or Approvers" in html
    assert "ask: reply request" in html and "Send reply" in html


def test_two_replies_from_the_inbox_complete_the_step_and_each_is_listed(client, interview, approver):
    client.force_login(approver)
    first = pending(interview)
    assert reply(client, first, "Friday noon").status_code == 302
    fast_forward(interview)
    second = pending(interview)
    assert second.iteration == 2 and second.pk != first.pk
    html = client.get(reverse("console:approvals")).content.decode()
    assert "Who signs it off?" in html and "Friday noon" in html and "after iteration 1, april at" in html
    assert reply(client, second, "Dana, the\nproduct lead").status_code == 302
    run = fast_forward(interview)
    assert run.status == "completed" and steps_of(run)["ask"].status == "completed"
    panel = client.get(reverse("console:step", args=[run.pk, "ask"])).content.decode()
    assert re.findall(r'data-call="([^"]+)"', panel) == ["ask_iter_1", "ask_iter_2", "ask_iter_3"]
    assert "Reply from april" in panel and "Dana, the\nproduct lead" in panel
    assert "Question 2; answers so far: [&quot;Friday noon&quot;]" in panel


def test_the_starter_may_reply_and_an_outsider_sees_why_not(client, interview, operator, outsider):
    client.force_login(operator)  # olive started the run: a reply is not an approval
    html = client.get(reverse("console:run", args=[interview.pk])).content.decode()
    assert "Send reply" in html
    viewer = member("vera", "Approvers")
    asked = pending(interview)
    asked.approvers = ["Reviewers"]
    asked.save()
    client.force_login(viewer)
    html = client.get(reverse("console:run", args=[interview.pk])).content.decode()
    assert "You cannot answer this: this reply request needs a member of Reviewers" in html
    assert "Send reply" not in html
    assert f'data-approval="{asked.pk}"' not in client.get(reverse("console:approvals")).content.decode()
    refused = reply(client, asked, "let me in", headers=HTMX)
    assert "Nothing was sent." in refused.content.decode() and pending(interview).pk == asked.pk


@pytest.mark.parametrize("text, says", [
    ("", "a reply needs some text"),
    ("   \n ", "a reply needs some text"),
    ("x" * 65537, "at most 65,536 bytes"),
])
def test_a_bad_reply_is_refused_on_the_card_and_changes_nothing(client, interview, approver, text, says):
    client.force_login(approver)
    asked = pending(interview)
    before = (RunInput.objects.count(), AuditEvent.objects.count())
    answer = reply(client, asked, text, headers=HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "Nothing was sent." in html and says.lower() in html.lower()
    assert f'data-approval="{asked.pk}"' in html and "Send reply" in html  # the card again, its form with it
    assert (RunInput.objects.count(), AuditEvent.objects.count()) == before
    assert pending(interview).pk == asked.pk


def test_a_reply_of_exactly_64_kib_is_taken(client, interview, approver):
    client.force_login(approver)
    asked = pending(interview)
    assert reply(client, asked, "é" * 32768).status_code == 302  # 65,536 bytes of UTF-8
    fast_forward(interview)
    asked.refresh_from_db()
    assert asked.status == "answered" and asked.reply == "é" * 32768


def test_form_bytes_that_are_not_utf8_are_refused(client, interview, approver):
    client.force_login(approver)
    asked = pending(interview)
    answer = client.post(reverse("console:reply", args=[asked.pk]), b"text=caf%E9&place=inbox",
                         content_type="application/x-www-form-urlencoded", headers=HTMX)
    assert answer.status_code == 200 and "The reply is not UTF-8 text." in answer.content.decode()
    assert pending(interview).pk == asked.pk and not RunInput.objects.filter(key__startswith="reply:").exists()


def test_a_second_reply_to_the_same_request_is_refused(client, interview, approver, operator):
    client.force_login(approver)
    asked = pending(interview)
    assert reply(client, asked, "first").status_code == 302
    fast_forward(interview)
    client.force_login(operator)
    html = reply(client, asked, "second", headers=HTMX).content.decode()
    assert "Nothing was sent." in html and "already answered" in html
    assert "This request is answered: it takes no more replies." in html
    asked.refresh_from_db()
    assert asked.reply == "first"


def test_a_reply_answers_the_request_its_id_names_and_no_other(client, interview, approver, save_workflow,
                                                                operator):
    other_run = fast_forward(services.run_start(user=operator, version=save_workflow(INTERVIEW)))
    client.force_login(approver)
    theirs, ours = pending(other_run), pending(interview)
    assert reply(client, theirs, "for the other run").status_code == 302
    fast_forward(other_run)
    theirs.refresh_from_db()
    assert theirs.reply == "for the other run" and pending(interview).pk == ours.pk


def test_a_reply_id_of_another_run_or_a_get_changes_nothing(client, interview, approver, run):
    client.force_login(approver)
    other = Approval.objects.get(run=run)  # an approval of another run: decided, not answered
    answer = reply(client, other, "hello", headers=HTMX)
    assert "Nothing was sent." in answer.content.decode() and "not answered with a reply" in answer.content.decode()
    assert reverse("console:reply", args=[999999]) and reply(client, type(other)(pk=999999), "x").status_code == 404
    assert client.get(reverse("console:reply", args=[pending(interview).pk])).status_code == 405
    other.refresh_from_db()
    assert other.status == "pending" and pending(interview).status == "pending"


def test_without_javascript_a_refusal_is_said_on_the_next_page(client, interview, approver):
    client.force_login(approver)
    answer = reply(client, pending(interview), "", follow=True)
    assert "Nothing was sent. A reply needs some text." in answer.content.decode()


def test_the_sentence_names_the_groups_a_request_names_and_its_expiry():
    at = datetime(2026, 11, 26, 9, 30, tzinfo=dt_timezone.utc)
    assert why_not_running("waiting", "reply") == "waiting for a reply from Operators or Approvers"
    assert (why_not_running("waiting", "reply", approvers=["Reviewers", "Leads"], expires_at=at)
            == "waiting for a reply from Leads or Reviewers until 2026-11-26 09:30:00 UTC")


def test_each_iteration_after_a_reply_is_a_piece_of_its_own_and_the_wait_is_named(client, interview, approver):
    client.force_login(approver)
    reply(client, pending(interview), "Friday noon")
    fast_forward(interview)
    times = step_times(interview, "ask")
    assert [(a.number, a.status) for a in times.attempts] == [(1, "asked"), (1, "asked")]
    assert [w.kind for w in times.waits if w.kind == "reply"] == ["reply", "reply"]
    assert times.waits[-1].ended_at is None and times.waits[-1].says.startswith("waiting for a person's reply")


def test_the_step_panel_and_the_dashboard_offer_the_request_too(client, interview, approver):
    client.force_login(approver)
    asked = pending(interview)
    html = client.get(reverse("console:step", args=[interview.pk, "ask"])).content.decode()
    assert f'id="panel-reply-{asked.pk}"' in html and "Reply: ask" in html and "Send reply" in html
    assert re.findall(r'data-call="([^"]+)"', html) == ["ask_iter_1"]  # the call the request follows
    dashboard = client.get(reverse("console:dashboard")).content.decode()
    assert "ask: Answer question 1" in dashboard and "(a reply is asked, after iteration 1)" in dashboard


def test_a_reply_after_the_request_expired_is_refused_and_changes_nothing(client, save_workflow, operator,
                                                                          approver):
    timed = INTERVIEW.replace("loop: {", "timeout: 30\n    loop: {")
    run = fast_forward(services.run_start(user=operator, version=save_workflow(timed.replace("interview", "timed"))),
                       rounds=1)
    asked = pending(run)
    assert asked.expires_at is not None
    client.force_login(approver)
    html = client.get(reverse("console:approvals")).content.decode()
    assert 'class="countdown" data-expires="' in html and "expires at" in html
    Approval.objects.filter(pk=asked.pk).update(expires_at=timezone.now() - timedelta(seconds=1))  # time passed
    said = reply(client, asked, "too late", headers=HTMX).content.decode()
    assert "Nothing was sent. This reply request timed out at" in said
    assert not RunInput.objects.filter(run=run, key__startswith="reply:").exists()
    run = fast_forward(run)  # the run records the timeout
    asked.refresh_from_db()
    assert asked.status == "expired" and run.status == "failed"
    said = reply(client, asked, "too late", headers=HTMX).content.decode()
    assert "Nothing was sent. Run " in said and "has ended (failed); it takes no more replies." in said
    assert "This request is expired: it takes no more replies." in said


def test_a_body_over_the_size_bound_is_a_400_in_the_console_s_layout_and_changes_nothing(client, interview,
                                                                                        approver):
    asked = pending(interview)
    client.force_login(approver)
    body = "text=" + "a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) + "&place=inbox"
    page = client.post(reverse("console:reply", args=[asked.pk]), body,
                       content_type="application/x-www-form-urlencoded")
    html = page.content.decode()
    assert page.status_code == 400
    assert 'class="topbar"' in html and "The request was too large or malformed, and nothing was changed" in html
    assert pending(interview) == asked and asked.reply == "" and not RunInput.objects.filter(
        run=interview, key__startswith="reply").exists()
