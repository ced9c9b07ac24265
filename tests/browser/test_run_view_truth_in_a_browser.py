"""What a person reads on a live run page comes from the server's events: a retry's backoff says the retry as it
happens, Time and Cost fill in as steps end, and steps that never ran read so, in the table and on the graph."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import LIVE, save

pytestmark = pytest.mark.slow

# The first attempt fails; the retry waits 3 s, long enough to read, short enough to end.
FLAKY = """
name: flaky_then_fine
steps:
  - {id: warm, agent: mock, command: warm, mock: {delay_s: 0.3}}
  - {id: flaky, agent: mock, command: go, depends_on: [warm], retry: {max_retries: 1, backoff_s: 3},
     mock: {fail_times: 1, error: connection reset}}
  - {id: after, agent: mock, command: after, depends_on: [flaky]}
"""
BREAKS = """
name: breaks_early
steps:
  - {id: gate, approval: required}
  - {id: load, agent: mock, command: load, depends_on: [gate], mock: {fail_times: 9, error: disk full}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""


def start(console, name: str) -> int:
    return console.deployment.query(
        "from forge.runs import services\nfrom forge.workflows.models import Workflow\n"
        f"result = services.run_start(user=None, version=Workflow.objects.get(name={name!r}).latest_version()).pk")


def cell(step: str, field: str) -> str:
    return f"document.querySelector('tr[data-step={step}] [data-field={field}]').textContent"


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_a_retry_backoff_reads_as_a_retry_while_it_waits_and_times_fill_in_live(console, browser):
    save(console, FLAKY)
    olive = console.login(browser, "olive")
    fetched = []
    olive.on("request", lambda request: fetched.append(request.url) if "/runs/" in request.url
             and request.resource_type in ("fetch", "xhr") else None)
    run_id = start(console, "flaky_then_fine")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function(LIVE)
    said = "waiting to retry after attempt 1 failed: connection reset"
    olive.wait_for_function(f"() => {cell('flaky', 'why')} === {said!r}", timeout=60_000)
    assert olive.inner_text("tr[data-step=flaky] [data-field=status]") == "pending"
    console.shot(olive, "retry-backoff")
    olive.wait_for_function("() => window.forgeRun.runStatus === 'completed'", timeout=60_000)
    olive.wait_for_function(f"() => {cell('after', 'seconds')} !== '-'")
    for step in ("warm", "flaky", "after"):
        assert olive.inner_text(f"tr[data-step={step}] [data-field=seconds]").endswith(" s")
        assert olive.inner_text(f"tr[data-step={step}] [data-field=why]") == ""
    assert float(olive.inner_text("tr[data-step=warm] [data-field=seconds]").removesuffix(" s")) >= 0.3
    # The page read no model again while the run moved: no /why, no timeline, only what the socket brought.
    assert not [url for url in fetched if "/why" in url or "/timeline" in url], fetched


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_steps_that_never_ran_read_so_in_the_table_and_look_apart_on_the_graph(console, browser):
    save(console, BREAKS)
    olive = console.login(browser, "olive")
    run_id = start(console, "breaks_early")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function(LIVE)
    olive.wait_for_function(f"() => {cell('report', 'why')} === 'waiting for upstream load'")
    done = console.deployment.forge("--user", "april", "approve", str(run_id), "gate")
    assert done.returncode == 0, done.stderr
    olive.wait_for_function("() => window.forgeRun.runStatus === 'failed'", timeout=60_000)
    olive.wait_for_function(f"() => {cell('report', 'status')} === 'not run: upstream failed'")
    assert olive.inner_text("tr[data-step=load] [data-field=status]") == "failed"
    assert "status-upstream-failed" in olive.get_attribute("tr[data-step=report] [data-field=status]", "class")
    olive.wait_for_function("() => window.forgeRun.cy !== null")
    drawn = olive.evaluate("""() => { const cy = window.forgeRun.cy, report = cy.getElementById('report'),
        load = cy.getElementById('load');
      return { never: report.hasClass('status-upstream-failed'), shape: report.style('shape'),
               failedShape: load.style('shape'), border: report.style('border-style') }; }""")
    assert drawn["never"] and drawn["shape"] == "cut-rectangle" and drawn["failedShape"] != "cut-rectangle"
    assert drawn["border"] == "dashed"
    console.shot(olive, "never-ran-live")
    # The same words after a reload (rendered by the server).
    olive.reload()
    assert olive.inner_text("tr[data-step=report] [data-field=status]") == "not run: upstream failed"
    console.shot(olive, "never-ran")
