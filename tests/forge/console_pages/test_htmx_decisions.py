"""A decision sent by htmx (issue 17, point 19) swaps its card instead of reloading the page: the answer is
what the decision said, put at the top of the page (#said), and the card goes; a refusal leaves the card as
it was typed. The same form without JavaScript posts and redirects with the sentence as a flash."""

import pytest
from django.urls import reverse

from forge.runs.models import Approval, RunInput

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def approval(run):
    return Approval.objects.get(run=run)


def decide(client, approval, **form):
    return client.post(reverse("console:decide", args=[approval.pk]),
                       {"next": reverse("console:approvals"), **form}, **HTMX)


def test_a_decision_by_htmx_answers_with_its_sentence_for_the_top_of_the_page(client, approver, approval):
    client.force_login(approver)
    response = decide(client, approval, decision="approve", comment="looks fine")
    html = response.content.decode()
    assert response.status_code == 200 and "HX-Reswap" not in response
    assert html.startswith('<ul hx-swap-oob="afterbegin:#said"><li class="success">')
    assert f"run {approval.run_id}" in html and "<html" not in html
    assert RunInput.objects.filter(run=approval.run).exists()  # the decision went to the run
    # The sentence was said here: the next page does not say it again
    assert "looks fine" not in client.get(reverse("console:approvals")).content.decode()
    assert 'class="success"' not in client.get(reverse("console:approvals")).content.decode()


@pytest.mark.parametrize("form, says", [
    ({"decision": "maybe"}, "Nothing was decided: choose one of approve, reject."),
    ({"decision": "approve", "comment": "c" * 2001}, "The comment has 2001 characters; at most 2000 are accepted."),
])
def test_a_refused_decision_by_htmx_leaves_the_card_and_says_why(client, approver, approval, form, says):
    client.force_login(approver)
    response = decide(client, approval, **form)
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    assert says in response.content.decode() and 'class="error"' in response.content.decode()
    assert not RunInput.objects.filter(run=approval.run, key__startswith="approval").exists()


def test_one_who_may_not_decide_is_told_so_and_nothing_changes(client, operator, approval):
    client.force_login(operator)  # the run's starter, an operator
    response = decide(client, approval, decision="approve")
    assert response["HX-Reswap"] == "none" and 'class="error"' in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.PENDING and approval.decision is None


def test_without_javascript_the_same_form_posts_and_redirects_with_a_flash(client, approver, approval):
    client.force_login(approver)
    response = client.post(reverse("console:decide", args=[approval.pk]),
                           {"next": reverse("console:approvals"), "decision": "approve"})
    assert response.status_code == 302 and response["Location"] == reverse("console:approvals")
    page = client.get(response["Location"]).content.decode()
    assert f'<ul class="messages" id="said" aria-live="polite"><li class="success">' in page


def test_the_inbox_card_s_form_posts_by_htmx_and_by_itself(client, approver, approval):
    client.force_login(approver)
    html = client.get(reverse("console:approvals")).content.decode()
    url = reverse("console:decide", args=[approval.pk])
    assert f'<form method="post" action="{url}" hx-post="{url}" hx-target="closest .approval" hx-swap="outerHTML">' \
           in html
    assert 'name="comment" maxlength="2000" hx-preserve>' in html  # a comment being typed survives a live read
    assert '<div id="inbox" hx-swap-oob="true">' in html and 'ws-connect="/ws/live/?topics=approvals"' in html


def test_every_page_sends_the_csrf_token_with_htmx_and_configures_it_for_the_policy(client, approver):
    client.force_login(approver)
    html = client.get(reverse("console:dashboard")).content.decode()
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles": false, "allowEval": false,""" in html
    assert """hx-headers='{"X-CSRFToken": \"""" in html


def test_a_live_part_s_read_leaves_the_sentences_for_the_page_loaded_next(client, approver, approval):
    client.force_login(approver)
    client.post(reverse("console:decide", args=[approval.pk]), {"next": "/approvals/", "decision": "approve"})
    refresh = client.get(reverse("console:runs"), **HTMX).content.decode()  # another tab's runs list, live
    assert '<ul class="messages" id="said" aria-live="polite"></ul>' in refresh
    assert 'class="success"' in client.get(reverse("console:approvals")).content.decode()
