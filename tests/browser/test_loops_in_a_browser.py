"""Seed 002's loops in Chromium against daphne and a real cluster (issue 18): an operator runs the interview
example (a reply gate), an approver answers twice from the inbox, each next question arriving there live, and
the operator's run view follows without a reload until the step completes; the code review example's step panel
lists its calls by their seed names. Screenshots at 1440 and 390 px wide (in the console's screenshot folder: FORGE_SCREENSHOTS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_console_in_a_browser import save_and_start

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LIVE = "() => document.getElementById('live').dataset.state === 'live'"
CARD = "#inbox .reply-request"


def why_is(step: str, text: str) -> str:
    return (f"() => (document.querySelector('tr[data-step={step}] [data-field=why]')?.textContent || '')"
            f".includes({text!r})")


def status_is(step: str, status: str) -> str:
    return f"() => document.querySelector('tr[data-step={step}] [data-field=status]').textContent === '{status}'"


def card_for(iteration: int) -> str:
    return (f"() => [...document.querySelectorAll('{CARD} .loop-count')]"
            f".some((p) => p.textContent.startsWith('Iteration {iteration} of 5'))")


def shots(console, page, name: str) -> None:
    """The page at a desktop's width and at a phone's, whole."""
    console.shots.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    for width, height in ((1440, 1000), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(console.shots / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def answer(page, text: str) -> None:
    page.fill(f"{CARD} textarea[name=text]", text)
    with page.expect_response(lambda r: "/reply/" in r.url and r.ok):
        page.click(f"{CARD} button.decision-reply")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_an_approver_answers_the_interview_twice_from_the_inbox_and_the_run_view_follows(console, browser):
    # The example's hour, cut to the test cluster's longest step timeout: the requests still count down.
    source = (EXAMPLES / "interview.yaml").read_text().replace("timeout: 1h", "timeout: 60s")
    run_id = save_and_start(console, source, "interview")
    olive = console.login(browser, "olive")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function(LIVE)
    olive.evaluate("() => { window.notReloaded = true; }")  # gone if the page loads again
    olive.wait_for_function(why_is("ask", "waiting for a reply from Operators or Approvers"))
    olive.wait_for_function("() => window.forgeRun.loopCount('ask') === 'iteration 1 of 5'")
    assert "Question 1 about the new checkout page" in olive.locator("#decisions .reply-request").inner_text()
    shots(console, olive, "run-waiting-for-a-reply")

    april = console.login(browser, "april")
    april.goto(f"{console.url}/approvals/")
    april.evaluate("() => { window.notReloaded = true; }")
    april.wait_for_function(card_for(1))
    card = april.locator(CARD)
    said = card.inner_text()
    assert "What should the new checkout page make better for its users?" in said
    assert "Who may answer: Operators or Approvers, or the person who started the run (olive)" in said
    assert "None yet: this is the first." in said
    # The step's timeout counts down on the card (countdown.js, each second).
    april.wait_for_function(f"() => document.querySelector('{CARD} .countdown').textContent.endsWith('s left')")
    shots(console, april, "inbox-reply-request")

    # An empty reply is refused on the card (the browser's own check aside), and nothing changes.
    april.evaluate("() => document.querySelector('#inbox .reply-request textarea').removeAttribute('required')")
    answer(april, "   ")
    assert "Nothing was sent. A reply needs some text." in april.locator(CARD).inner_text()
    shots(console, april, "inbox-reply-refused")

    answer(april, "Faster checkouts: fewer steps to pay.")
    april.wait_for_function(card_for(2))  # the next question arrives live, with the first answer listed
    said = april.locator(CARD).inner_text()
    assert "Who uses it most, and on which devices?" in said
    assert "after iteration 1, april at" in said and "Faster checkouts: fewer steps to pay." in said
    olive.wait_for_function("() => window.forgeRun.loopCount('ask') === 'iteration 2 of 5'")
    shots(console, april, "inbox-second-question")

    answer(april, "Shop owners, mostly on phones.")
    april.wait_for_function("() => !document.querySelector('#inbox .reply-request')")
    assert april.evaluate("() => window.notReloaded === true")

    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    olive.wait_for_function(status_is("ask", "completed"))
    assert olive.evaluate("() => window.notReloaded === true")
    assert olive.evaluate("() => window.forgeRun.loopCount('ask')") == "iteration 3 of 5"
    assert olive.locator("#decisions .reply-request").count() == 0
    olive.click("button[data-open-step=ask]")
    olive.wait_for_selector("#step-panel li.call")
    names = olive.eval_on_selector_all("#step-panel li.call", "els => els.map((e) => e.dataset.call)")
    assert names == ["ask_iter_1", "ask_iter_2", "ask_iter_3"]
    replies = olive.locator("#step-panel .reply-after").all_inner_texts()
    assert len(replies) == 2 and all(r.startswith("Reply from april at") for r in replies)
    olive.locator("#step-panel h3", has_text="Calls").scroll_into_view_if_needed()  # the panel scrolls on its own
    shots(console, olive, "run-interview-completed")
    olive.locator("#step-panel .reply-after").first.scroll_into_view_if_needed()
    shots(console, olive, "run-interview-reply-in-panel")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_code_review_steps_panel_lists_its_calls_by_their_seed_names(console, browser):
    run_id = save_and_start(console, (EXAMPLES / "code_review.yaml").read_text(), "code_review")
    olive = console.login(browser, "olive")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function(LIVE)
    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'")
    assert olive.evaluate("() => window.forgeRun.loopCount('review')") == "cycle 1 of 2"
    olive.click("button[data-open-step=review]")
    olive.wait_for_selector("#step-panel li.call")
    calls = olive.locator("#step-panel li.call")
    names = olive.eval_on_selector_all("#step-panel li.call", "els => els.map((e) => e.dataset.call)")
    assert names == ["review", "review_fix_1", "review_2"]
    assert calls.nth(0).locator(".verdict").inner_text() == "REQUEST_CHANGES"
    assert "Fix cycle 1: address every point of this review." in calls.nth(1).inner_text()
    assert calls.nth(2).locator(".verdict").inner_text() == "APPROVED"
    assert all("cost 0.006" in text for text in calls.all_inner_texts())
    olive.locator("#step-panel h3", has_text="Calls").scroll_into_view_if_needed()
    shots(console, olive, "run-code-review-calls")
