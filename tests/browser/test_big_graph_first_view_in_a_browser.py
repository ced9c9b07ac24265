"""A big graph reads at first sight (issue 17, point 14): the first view never zooms below readable labels, and
shows part of a graph too big for that (the failed step, else the first steps) saying so, Fit still showing all;
parallel chains between the same two steps fold into one counted node that opens, folds and counts live."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import save

pytestmark = pytest.mark.parametrize("console", ["sqlite"], indirect=True)

DRAWN = "() => window.forgeGraph && window.forgeGraph.view && window.forgeGraph.view.cy.nodes().length > 0"
ZOOM = "() => window.forgeGraph.view.cy.zoom()"
SHOWN = "() => window.forgeGraph.view.cy.nodes().filter((n) => n.visible()).map((n) => n.id())"
PART = "() => document.getElementById('graph-part')?.textContent || ''"


def braid(rows: int = 6, layers: int = 30, fails: str = "") -> str:
    """Steps in `layers` layers of `rows`, each after two neighbours of the layer before: nothing folds."""
    out = ["name: braid", "steps:"]
    for x in range(layers):
        for y in range(rows):
            deps = sorted({f"s{x - 1:02d}_{y}", f"s{x - 1:02d}_{(y + 1) % rows}"}) if x else []
            sid = f"s{x:02d}_{y}"
            out.append(f"  - {{id: {sid}, agent: mock, command: go"
                       + (f", depends_on: [{', '.join(deps)}]" if deps else "")
                       + (", mock: {fail_times: 9, error: disk full}" if sid == fails else "") + "}")
    return "\n".join(out) + "\n"


def lanes(chains: int = 10, length: int = 20) -> str:
    """An approval `plan`, `chains` parallel chains of `length` mock steps after it, and a `merge` after them all."""
    out = ["name: lanes", "steps:", "  - {id: plan, approval: required}"]
    for c in range(chains):
        for i in range(length):
            out.append(f"  - {{id: c{c}_{i:02d}, agent: mock, command: go, depends_on: [{f'c{c}_{i - 1:02d}' if i else 'plan'}]}}")
    ends = ", ".join(f"c{c}_{length - 1:02d}" for c in range(chains))
    out.append(f"  - {{id: merge, agent: mock, command: go, depends_on: [{ends}]}}")
    return "\n".join(out) + "\n"


def start(console, workflow: str) -> int:
    return console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        f"version=Workflow.objects.get(name={workflow!r}).latest_version()).pk")


def in_view(page, node_id: str) -> bool:
    return page.evaluate(f"""() => {{
      const cy = window.forgeGraph.view.cy; const at = cy.getElementById({node_id!r}).renderedPosition();
      return at.x > 0 && at.y > 0 && at.x < cy.width() && at.y < cy.height(); }}""")


def all_in_view(page) -> bool:
    return page.evaluate("""() => { const cy = window.forgeGraph.view.cy; const e = cy.extent();
      const b = cy.nodes().filter((n) => n.visible()).boundingBox();
      return b.x1 >= e.x1 - 1 && b.y1 >= e.y1 - 1 && b.x2 <= e.x2 + 1 && b.y2 <= e.y2 + 1; }""")


def test_a_graph_too_big_to_read_whole_opens_readable_on_what_matters(console, browser):
    save(console, braid(fails="s15_3"))
    page = console.login(browser, "olive")
    page.set_viewport_size({"width": 1440, "height": 1000})

    # The workflow's page: the first steps, readable; the status line says the rest is there.
    page.goto(console.url + "/workflows/braid/")
    page.wait_for_function(DRAWN)
    page.wait_for_function(f"() => ({PART})().startsWith('Showing part of 180 steps: Fit shows all')")
    assert page.evaluate(ZOOM) * 11 >= 8, "labels drawn at a size a person reads"
    assert in_view(page, "s00_0") and in_view(page, "s00_5"), "the first steps are in view"
    assert not in_view(page, "s29_0")
    console.shot(page, "big-graph-first-view-workflow")
    page.click("[data-graph=fit]")  # an overview: everything, smaller than readable
    page.wait_for_function(f"() => ({PART})() === ''")
    assert all_in_view(page) and page.evaluate(ZOOM) * 11 < 7

    # The run page: centred on the failed step, readable.
    run_id = start(console, "braid")
    assert console.deployment.finished(run_id)["status"] == "failed"
    page.goto(f"{console.url}/runs/{run_id}/")
    page.wait_for_function(DRAWN)
    page.wait_for_function(f"() => ({PART})().startsWith('Showing part of 180 steps')")
    assert page.evaluate(ZOOM) * 11 >= 8
    assert page.evaluate("() => { const cy = window.forgeGraph.view.cy; const at = cy.getElementById('s15_3')"
                         ".renderedPosition(); return Math.abs(at.x - cy.width() / 2) < 3 && "
                         "Math.abs(at.y - cy.height() / 2) < 3; }"), "the failed step is centred"
    console.shot(page, "big-graph-first-view-run")
    page.click("[data-graph=fit]")
    page.wait_for_function(f"() => ({PART})() === ''")
    assert all_in_view(page)


def test_parallel_chains_fold_into_one_counted_node(console, browser):
    save(console, lanes())
    page = console.login(browser, "olive")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(console.url + "/workflows/lanes/")
    page.wait_for_function(DRAWN)
    group = page.evaluate("() => window.forgeGraph.view.groups.map((g) => g.id)")
    assert len(group) == 1
    label = f"() => window.forgeGraph.view.cy.getElementById({group[0]!r}).data('label')"
    assert sorted(page.evaluate(SHOWN)) == sorted(["plan", "merge", group[0]])
    assert page.evaluate(label) == "10 chains, 200 steps\nc0_00 … c9_19"
    assert page.evaluate(ZOOM) * 11 >= 8 and all_in_view(page) and page.evaluate(PART) == ""

    # The run page: the group counts its steps live, opens on a click (each step with its state), folds again.
    run_id = start(console, "lanes")
    page.goto(f"{console.url}/runs/{run_id}/")
    page.wait_for_function(DRAWN)
    page.wait_for_function("() => document.getElementById('live').dataset.state === 'live'")
    assert page.evaluate(label).startswith("10 chains, 200 steps\nc0_00 … c9_19\n200 not started")
    done = console.deployment.forge("--user", "april", "approve", str(run_id), "plan")
    assert done.returncode == 0, done.stderr
    page.wait_for_function(f"() => ({label})().endsWith('200 done')", timeout=180_000)
    page.wait_for_function(f"() => window.forgeGraph.view.cy.getElementById({group[0]!r}).hasClass('status-completed')")
    console.shot(page, "parallel-chains-folded")
    at = page.evaluate(f"() => window.forgeGraph.view.cy.getElementById({group[0]!r}).renderedPosition()")
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
    page.wait_for_function("() => window.forgeGraph.view.cy.getElementById('c4_10').visible()")
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('c4_10').hasClass('status-completed')")
    assert page.evaluate(f"() => window.forgeGraph.view.cy.getElementById({group[0]!r}).data('label')") \
        == "− fold 10 chains, 200 steps (c0_00 … c9_19)"
    console.shot(page, "parallel-chains-opened")
    page.evaluate(f"() => window.forgeGraph.view.fold({group[0]!r})")
    page.wait_for_function("() => !window.forgeGraph.view.cy.getElementById('c4_10').visible()")
