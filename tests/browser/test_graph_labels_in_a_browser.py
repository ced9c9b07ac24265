"""A step's label stays inside its box on the graph: "not run: upstream failed" (wider than a step's box at the
graph's font, it ran from border to border and past a dashed box's cut corners) wraps inside the border."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import LIVE, save

pytestmark = pytest.mark.parametrize("console", ["sqlite"], indirect=True)

FAILS_FIRST = """
name: fails_first
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {fail_times: 9, error: disk full}}
  - {id: load, agent: mock, command: load, depends_on: [fetch]}
"""
DRAWN = "() => window.forgeGraph && window.forgeGraph.view && window.forgeGraph.view.cy.nodes().length === 2"
# Each node's label against the room inside its border, less 2 px a side (model coordinates: whatever the zoom).
OVERFLOW = """() => window.forgeGraph.view.cy.nodes().map((n) => {
  const label = n.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false });
  return { id: n.id(), label: n.data('label'), labelWidth: label.w,
           room: n.width() - 2 * parseFloat(n.style('border-width')) - 4 };
})"""


def test_a_not_run_label_wraps_inside_its_box(console, browser):
    save(console, FAILS_FIRST)
    run_id = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        "version=Workflow.objects.get(name='fails_first').latest_version()).pk")
    assert console.deployment.finished(run_id)["status"] == "failed"
    page = console.login(browser, "olive")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{console.url}/runs/{run_id}/")
    page.wait_for_function(LIVE)
    page.wait_for_function(DRAWN)
    nodes = {n["id"]: n for n in page.evaluate(OVERFLOW)}
    assert "not run: upstream failed" in nodes["load"]["label"]
    for node in nodes.values():
        assert node["labelWidth"] <= node["room"], node
    page.locator(".graph-card").screenshot(path=str(console.shots / "graph-not-run-label.png"))
