"""The run view's panes as a person uses them, in Chromium against a real cluster: the status list's counts move
while the run runs and its failed step is one click away; the Gantt (the Graph | Gantt toggle) draws a retried
step as two pieces with a marker and the backoff between them, and a running piece grows to the now line; the run
log filters by level and text, follows the selected step, unfolds a long traceback and downloads."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import LIVE, save

pytestmark = pytest.mark.slow

PANES = """
name: panes
steps:
  - {id: go, approval: required, approval_message: start?}
  - {id: warm, agent: python, command: tests.cluster.callables.gated, depends_on: [go]}
  - {id: flaky, agent: mock, command: flaky, depends_on: [warm], retry: {max_retries: 2, backoff_s: 1},
     mock: {fail_times: 1, error: connection reset}}
  - {id: nap, agent: mock, command: nap, depends_on: [warm], mock: {delay_s: 2, stdout: "napped\\nwell"}}
  - id: broken
    agent: mock
    command: broken
    depends_on: [nap]
    mock:
      fail_times: 9
      error: "Traceback (most recent call last):\\n  File a\\n  File b\\n  File c\\n  File d\\n  File e\\n  File f\\n  File g\\n  File h\\nOSError: disk full"
  - {id: after, agent: mock, command: after, depends_on: [broken]}
"""


def counts(page) -> dict[str, int]:
    return page.evaluate("() => Object.fromEntries([...document.querySelectorAll('#status-list [data-group]')]"
                         ".map((g) => [g.dataset.group, Number(g.dataset.count)]))")


def in_group(page, group: str) -> list[str]:
    return page.eval_on_selector_all(f"#status-list [data-group={group}] [data-status-step]",
                                     "links => links.map((a) => a.dataset.statusStep)")


def log_rows(page) -> list[dict]:
    return page.eval_on_selector_all("#run-log tbody tr", "rows => rows.map((r) => ({level: r.dataset.level, "
                                     "step: r.dataset.step, text: r.querySelector('.log-text').innerText}))")


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_status_list_gantt_and_log_of_a_run_with_a_retry_and_a_failure(console, browser):
    save(console, PANES)
    run = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        "version=Workflow.objects.get(name='panes').latest_version()).pk")
    page = console.login_in(browser.new_context(viewport={"width": 1440, "height": 1100}, accept_downloads=True),
                            "olive")
    page.goto(console.url + f"/runs/{run}/")
    page.wait_for_function(LIVE)
    page.wait_for_function("() => document.querySelector('#status-list')?.dataset.ready === 'true'")
    assert counts(page) == {"failed": 0, "not_run": 0, "running": 0, "waiting": 6, "done": 0}
    page.wait_for_function("() => document.querySelector('#run-log').dataset.count === '3'")  # pending, waiting, asked
    page.evaluate("() => { window.samePage = true; }")  # gone if the page reloads
    console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.runs.models import Approval\n"
        f"result = services.approval_decide(user=User.objects.get(username='april'), "
        f"approval=Approval.objects.get(run_id={run}), decision='approve').pk")
    page.click("[data-view=gantt]")

    # The Gantt: warm's piece grows to the now line while it runs.
    assert page.is_hidden(".graph-card") and page.is_visible("#gantt")
    piece = "#gantt g[data-step=warm] rect.piece"
    page.wait_for_selector(piece + ".status-running")
    page.wait_for_selector("#gantt line.now-line", state="attached")  # a line: no width to be "visible"
    # While warm runs: it is in Running with a clock that ticks, the others wait.
    page.wait_for_function("() => document.querySelector('#status-list [data-group=running]')?.dataset.count === '1'")
    assert in_group(page, "running") == ["warm"] and counts(page)["waiting"] == 4 and counts(page)["done"] == 1
    clock = "#status-list [data-group=running] .elapsed"
    width = float(page.get_attribute(piece, "width"))
    first = page.text_content(clock)
    page.wait_for_function(f"(was) => document.querySelector('{clock}')?.textContent !== was", arg=first)
    page.wait_for_function(f"(w) => {{ const p = document.querySelector('{piece}'); "
                           f"return p && Number(p.getAttribute('width')) > w + 1; }}", arg=width)

    assert page.locator("#gantt g[data-step=after] rect.outline").count() == 1  # not started: an outline
    console.shot(page, "run-panes-gantt-live")
    console.gates.open("warm")  # warm was held running until now, however slow the machine

    # The counts move to the end without a reload: broken failed, after never ran (not run, not done), the rest
    # done.
    page.wait_for_function("() => document.querySelector('#run-status').textContent.startsWith('failed')",
                           timeout=120_000)
    page.wait_for_function("() => document.querySelector('#status-list [data-group=failed]')?.dataset.count === '1'"
                           " && document.querySelector('#status-list [data-group=done]')?.dataset.count === '4'")
    assert counts(page) == {"failed": 1, "not_run": 1, "running": 0, "waiting": 0, "done": 4}
    assert in_group(page, "failed") == ["broken"] and in_group(page, "not_run") == ["after"]
    assert "after" not in in_group(page, "done")
    assert page.eval_on_selector_all("#status-list [data-group]", "gs => gs.map((g) => g.dataset.group)") == [
        "failed", "not_run", "running", "waiting", "done"]
    assert page.text_content("#status-list [data-group=not_run] summary").split() == ["Not", "run", "1"]
    assert page.evaluate("() => window.samePage")
    # What the page folded from live events is what the server folds from the same events.
    live, fresh = page.evaluate("""async () => {
        const pick = (s) => ({ status: s.status, attempts: s.attempts.map((a) => [a.n, a.status, a.start, a.end]),
                               waits: s.waits.map((w) => [w.kind, w.start, w.end]) });
        const data = await (await fetch(document.getElementById('run-panes').dataset.attempts)).json();
        const ms = (iso) => (iso ? Date.parse(iso) : null);
        const fresh = data.steps.map((s) => pick({ status: s.status,
            attempts: s.attempts.map((a) => ({ ...a, start: ms(a.start), end: ms(a.end) })),
            waits: s.waits.map((w) => ({ ...w, start: ms(w.start), end: ms(w.end) })) }));
        return [window.forgeAttempts.order.map((id) => pick(window.forgeAttempts.steps.get(id))), fresh];
    }""")
    assert live == fresh
    # After a snapshot (a backlog too long to replay), the panes read what they missed again.
    with page.expect_request(lambda request: request.url.endswith(f"/runs/{run}/attempts/")):
        page.evaluate("() => document.dispatchEvent(new CustomEvent('forge:snapshot', {detail: {last_id: 0}}))")
    page.wait_for_function("() => window.forgeAttempts.ready && document.querySelector('#status-list "
                           "[data-group=failed]').dataset.count === '1'")
    page.wait_for_function("() => [...document.querySelectorAll('#run-log tbody tr')].some("
                           "(r) => r.dataset.level === 'error' && r.dataset.step === 'broken')")  # appended live

    # The retried step: two pieces, a marker where the second begins, the backoff between them drawn lighter.
    flaky = "#gantt g[data-step=flaky]"
    page.wait_for_selector(flaky + " rect.piece[data-attempt='2'].status-completed")
    assert page.eval_on_selector_all(flaky + " rect.piece", "ps => ps.map((p) => p.getAttribute('class'))") == [
        "piece status-failed", "piece status-completed"]
    assert page.locator(flaky + " line.marker").count() == 1
    backoff = page.locator(flaky + " rect.wait-backoff")
    assert backoff.count() == 1
    assert float(backoff.get_attribute("width")) > 1
    x = lambda sel: float(page.get_attribute(sel, "x"))  # noqa: E731
    assert x(flaky + " rect.piece[data-attempt='1']") < x(flaky + " rect.wait-backoff") < x(
        flaky + " rect.piece[data-attempt='2']")
    assert page.locator("#gantt line.now-line").count() == 0  # the run ended: no now
    console.shot(page, "run-panes-gantt")
    # Its panel, opened from its row: each attempt with its own time, the backoff a row of its own between them.
    page.click("#gantt g[data-step=flaky] text.label")
    page.wait_for_selector(".step-panel[data-step=flaky]")
    rows = page.eval_on_selector_all(".step-panel table.attempts tbody tr",
                                     "rows => rows.map((r) => r.dataset.attempt || r.dataset.wait)")
    assert rows.index("1") < rows.index("backoff") < rows.index("2")
    took = float(page.text_content(".step-panel tr[data-attempt='1'] [data-field=took]").split()[0])
    assert took < 1  # the mock failed at once; the second of backoff after it is the wait's
    assert "backoff before retrying" in page.text_content(".step-panel tr[data-wait=backoff]")

    # A step that never ran is a link too: it selects the step.
    page.click("#status-list [data-group=not_run] summary")
    page.click("#status-list [data-status-step=after]")
    page.wait_for_selector(".step-panel[data-step=after]")
    # The failed step is one click away: the status list selects it, the panel opens, the log narrows to it.
    page.click("#status-list [data-status-step=broken]")
    page.wait_for_selector(".step-panel[data-step=broken]")
    page.wait_for_function("() => document.querySelector('#log-scope').textContent === 'Step broken only'")
    rows = log_rows(page)
    assert rows and {r["step"] for r in rows} == {"broken"}
    # its traceback folded behind "show all"
    fold = page.locator("#run-log .show-all").first
    assert fold.text_content().startswith("show all") and "OSError: disk full" not in page.inner_text("#run-log tbody")
    fold.click()
    assert "OSError: disk full" in page.inner_text("#run-log tbody")
    page.click("#log-all-steps")
    page.wait_for_function("() => document.querySelector('#log-scope').textContent === 'All steps'")

    # Level and text filters.
    page.select_option("#log-level", "error")
    rows = log_rows(page)
    assert rows and {r["level"] for r in rows} == {"error"} and {"broken", ""} >= {r["step"] for r in rows}
    page.select_option("#log-level", "info")
    page.fill("#log-search", "connection reset")
    page.wait_for_function("() => [...document.querySelectorAll('#run-log tbody tr')].every("
                           "(r) => r.innerText.toLowerCase().includes('connection reset'))")
    rows = log_rows(page)
    assert rows and {r["step"] for r in rows} == {"flaky"}
    page.fill("#log-search", "napped")
    page.wait_for_function("() => document.querySelector('#run-log').dataset.count === '1'")
    assert log_rows(page)[0]["text"] == "napped\nwell"
    page.fill("#log-search", "")  # the search is read 150 ms after the last key: wait for the unfiltered link
    page.wait_for_function("() => !document.querySelector('#run-log [data-download=text]').href.includes('q=')")
    console.shot(page, "run-panes-log")

    # Download: the whole log as text, named for the run.
    with page.expect_download() as said:
        page.click("#run-log [data-download=text]")
    download = said.value
    assert download.suggested_filename == f"run-{run}.log"
    text = open(download.path(), encoding="utf-8").read()
    assert "OSError: disk full" in text and "connection reset" in text and "napped" in text

    page.click("[data-view=graph]")
    page.wait_for_selector(".graph-card", state="visible")
    assert page.is_hidden("#gantt-card")
    # laid out while the Gantt was shown, the graph is fitted to its card when it comes back
    page.wait_for_function("() => { const cy = window.forgeRun.cy, e = cy && cy.extent(); return cy && "
                           "cy.nodes(':visible').every((n) => { const p = n.position(); "
                           "return p.x >= e.x1 && p.x <= e.x2 && p.y >= e.y1 && p.y <= e.y2; }); }")
    console.shot(page, "run-panes-graph")

    # On a phone the panes fit the screen's width: the status list wraps, the log scrolls inside its card.
    page.set_viewport_size({"width": 390, "height": 844})
    page.click("[data-view=gantt]")
    page.wait_for_function("() => document.querySelector('#gantt g[data-step=flaky] rect.piece')")
    for pane in ("#run-panes", "#gantt-card", "#run-log"):
        right = page.evaluate(f"() => document.querySelector('{pane}').getBoundingClientRect().right")
        assert right <= 390, f"{pane} reaches {right} px"
    assert page.evaluate("() => { const g = document.querySelector('#gantt'); return g.scrollWidth <= g.clientWidth; }")
    console.shot(page, "run-panes-phone")


def wide(n: int) -> str:
    return "name: wide\nsteps:\n  - {id: go, approval: required}\n" + "".join(
        f"  - {{id: s{i:03}, agent: mock, command: x, depends_on: [go]}}\n" for i in range(n))


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_a_thousand_step_run_draws_only_the_gantt_rows_in_view(console, browser):
    save(console, wide(1000))
    run = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        "version=Workflow.objects.get(name='wide').latest_version()).pk")
    page = console.login_in(browser.new_context(viewport={"width": 1440, "height": 1000}), "olive")
    page.goto(console.url + f"/runs/{run}/")
    page.wait_for_function("() => document.querySelector('#status-list')?.dataset.ready === 'true'")
    assert counts(page) == {"failed": 0, "not_run": 0, "running": 0, "waiting": 1001, "done": 0}
    assert page.locator("#status-list [data-group=waiting] li").last.text_content() == "and 901 more"
    page.click("[data-view=gantt]")
    page.wait_for_selector("#gantt g[data-step=go] rect.wait-approval")
    drawn = page.locator("#gantt g.gantt-row").count()
    assert 10 < drawn < 60  # the rows in view and a few more, not a thousand
    assert page.evaluate("() => document.getElementById('gantt').scrollHeight") > 1000 * 22
    page.evaluate("() => { const g = document.getElementById('gantt'); g.scrollTop = g.scrollHeight; }")
    page.wait_for_selector("#gantt g[data-step=s999] rect.outline")
    assert page.locator("#gantt g[data-step=go]").count() == 0 and page.locator("#gantt g.gantt-row").count() < 60
    page.click("#gantt g[data-step=s998]")
    page.wait_for_selector(".step-panel[data-step=s998]")
    page.screenshot(path=str(console.shots / "run-panes-gantt-1000.png"))  # the view, not a thousand table rows

    # Cancelled, the run's steps did not run: Not run (each saying "cancelled"), none of them Done.
    console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.runs.models import Run\n"
        f"result = services.run_cancel(user=User.objects.get(username='olive'), run=Run.objects.get(pk={run})).pk")
    page.wait_for_function("() => document.querySelector('#status-list [data-group=not_run]')"
                           "?.dataset.count === '1001'", timeout=120_000)
    assert counts(page) == {"failed": 0, "not_run": 1001, "running": 0, "waiting": 0, "done": 0}
    assert page.text_content("#status-list [data-group=not_run] li .muted").strip() == "cancelled"
