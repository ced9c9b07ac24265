"""The graph a person reads, small and large (issue 17, points 14 and 23): a one-step workflow at a readable size,
a 302-step run folded into a counted group that opens and folds, the zoom bounded, a step found by its id and
selected, the rest hidden, the canvas reached and driven by the keyboard, full screen; on the run's page and on
the workflow's page."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import save

pytestmark = pytest.mark.parametrize("console", ["sqlite"], indirect=True)

ONE_STEP = "name: one_step\nsteps:\n  - {id: only, agent: mock, command: go}\n"


def fan_out(n: int = 300) -> str:
    """An approval `start`, a fan-out of `n` mock steps after it (one of which fails), and an `end` after all."""
    steps = [f"  - {{id: b{i:04d}, agent: mock, command: go, depends_on: [start]"
             + (", mock: {fail_times: 9, error: disk full}" if i == 150 else "")
             + (", name: Shard of the north" if i == 123 else "") + "}" for i in range(n)]
    deps = ", ".join(f"b{i:04d}" for i in range(n))
    return "\n".join(["name: wide", "steps:", "  - {id: start, approval: required}", *steps,
                      f"  - {{id: end, agent: mock, command: go, depends_on: [{deps}]}}"]) + "\n"


DRAWN = "() => window.forgeGraph && window.forgeGraph.view && window.forgeGraph.view.cy.nodes().length > 0"
# The steps and groups drawn (a group's members are hidden behind it; a hidden-the-rest step is not drawn).
SHOWN = "() => window.forgeGraph.view.cy.nodes().filter((n) => n.visible()).map((n) => n.id())"
ZOOM = "() => window.forgeGraph.view.cy.zoom()"


def group_id(page) -> str:
    return page.evaluate("() => window.forgeGraph.view.groups[0].id")


def group_label(page) -> str:
    return page.evaluate(f"() => window.forgeGraph.view.cy.getElementById({group_id(page)!r}).data('label')")


def click_node(page, node_id: str) -> None:
    at = page.evaluate(f"() => window.forgeGraph.view.cy.getElementById({node_id!r}).renderedPosition()")
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])


def centred(page, node_id: str) -> bool:
    return page.evaluate(f"""() => {{
      const cy = window.forgeGraph.view.cy; const at = cy.getElementById({node_id!r}).renderedPosition();
      return Math.abs(at.x - cy.width() / 2) < 3 && Math.abs(at.y - cy.height() / 2) < 3; }}""")


def shows(page, steps: list[str]) -> bool:
    """Waits until the steps drawn (not the groups) are `steps`; True, or a timeout naming what is drawn."""
    try:
        page.wait_for_function("(want) => JSON.stringify(window.forgeGraph.view.cy.nodes().filter((n) => n.visible()"
                               " && !n.data('group')).map((n) => n.id()).sort()) === JSON.stringify(want)",
                               arg=sorted(steps), timeout=15_000)
    except Exception:
        raise AssertionError(f"drawn: {page.evaluate(SHOWN)}") from None
    return True


def in_view(page, node_id: str) -> bool:
    return page.evaluate(f"""() => {{
      const cy = window.forgeGraph.view.cy; const at = cy.getElementById({node_id!r}).renderedPosition();
      return at.x > 0 && at.y > 0 && at.x < cy.width() && at.y < cy.height(); }}""")


def test_a_one_step_workflow_is_drawn_at_a_readable_size_not_blown_up(console, browser):
    save(console, ONE_STEP)
    page = console.login(browser, "olive")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(console.url + "/workflows/one_step/")
    page.wait_for_function(DRAWN)
    page.click("[data-graph=fit]")
    zoom = page.evaluate(ZOOM)
    assert 7 / 11 <= zoom <= 1.5, zoom  # labels drawn, and the node no bigger than 1.5x its size
    width = page.evaluate("() => window.forgeGraph.view.cy.getElementById('only').renderedWidth()")
    assert width <= 1.5 * 120 + 1
    console.shot(page, "graph-one-step-workflow")
    # Zoom in as far as the button goes: bounded, and the button says so.
    for _ in range(20):
        if page.is_disabled("[data-graph=zoom-in]"):
            break
        page.click("[data-graph=zoom-in]")
    assert page.is_disabled("[data-graph=zoom-in]") and page.evaluate(ZOOM) == pytest.approx(3)
    for _ in range(40):
        if page.is_disabled("[data-graph=zoom-out]"):
            break
        page.click("[data-graph=zoom-out]")
    assert page.is_disabled("[data-graph=zoom-out]") and page.evaluate(ZOOM) == pytest.approx(0.1)
    page.click("[data-graph=fit]")
    assert page.evaluate(ZOOM) <= 1.5

    # A chain of 25: its 23 middle steps (one upstream, one downstream each) fold into one node.
    chain = [f"  - {{id: c{i:02d}, agent: mock, command: go" + (f", depends_on: [c{i - 1:02d}]" if i else "") + "}"
             for i in range(25)]
    save(console, "\n".join(["name: long_chain", "steps:", *chain]) + "\n")
    page.goto(console.url + "/workflows/long_chain/")
    page.wait_for_function(DRAWN)
    page.click("[data-graph=fit]")
    assert sorted(page.evaluate(SHOWN)) == sorted(["c00", "c24", group_id(page)])
    assert group_label(page) == "+23 steps\nc01 … c23" and page.evaluate(ZOOM) * 11 >= 7
    console.shot(page, "graph-chain-of-25-folded")


def test_a_302_step_run_folds_its_fan_out_finds_hides_and_follows_the_keyboard(console, browser):
    save(console, fan_out())
    run_id = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
        "from forge.workflows.models import Workflow\n"
        "result = services.run_start(user=User.objects.get(username='olive'), "
        "version=Workflow.objects.get(name='wide').latest_version()).pk")
    page = console.login(browser, "olive")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{console.url}/runs/{run_id}/")
    page.wait_for_function(DRAWN)
    page.wait_for_function("() => document.getElementById('live').dataset.state === 'live'")

    # Folded: start, one counted group, end; readable after Fit.
    page.click("[data-graph=fit]")
    assert sorted(page.evaluate(SHOWN)) == sorted(["start", "end", group_id(page)])
    assert page.evaluate(ZOOM) * 11 >= 7, "labels are drawn from 7 px on screen"
    assert group_label(page).startswith("+300 steps\nb0000 … b0299\n300 not started")
    assert "of 302 steps" in page.get_attribute("#graph", "aria-label")

    # The group follows the run live (its members have no drawn node while folded).
    done = console.deployment.forge("--user", "april", "approve", str(run_id), "start")
    assert done.returncode == 0, done.stderr
    page.wait_for_function("() => { const v = window.forgeGraph.view; return v.cy.getElementById(v.groups[0].id)"
                           ".data('label').includes('1 failed · 299 done'); }", timeout=120_000)
    page.wait_for_function("() => window.forgeGraph.view.cy.getElementById(window.forgeGraph.view.groups[0].id)"
                           ".hasClass('status-failed')")
    page.click("[data-graph=fit]")
    console.shot(page, "graph-302-steps-folded")

    # A click opens the group: each step drawn with its state now; a click on its header folds it again.
    group = group_id(page)
    click_node(page, group)
    page.wait_for_function("() => window.forgeGraph.view.cy.getElementById('b0150').visible()")
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('b0150').hasClass('status-failed')")
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('b0001').hasClass('status-completed')")
    assert page.evaluate(ZOOM) * 11 >= 7, "an opened group shows its first steps readable"
    assert page.evaluate("() => window.forgeRun.selected") is None, "a group is no step: nothing selected"
    console.shot(page, "graph-302-steps-opened")
    click_node(page, group)
    page.wait_for_function("() => !window.forgeGraph.view.cy.getElementById('b0150').visible()")
    assert len(page.evaluate(SHOWN)) == 3

    # Find a step by its name: it is selected (its panel opens) and centred, its group opened.
    page.fill("#graph-find", "of the NORTH")
    page.press("#graph-find", "Enter")
    page.wait_for_function("() => window.forgeRun.selected === 'b0123'")
    page.wait_for_selector("#step-panel :text('b0123')")
    assert centred(page, "b0123")
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('b0123').selected()")
    assert page.text_content("#graph-found").startswith("Step 1 of 1 found")

    # Hide the rest: only what was found is drawn; then by state: the failures.
    page.check("#graph-hide")
    assert shows(page, ["b0123"])
    page.fill("#graph-find", "b012")  # by id
    assert shows(page, [f"b012{i}" for i in range(10)])
    page.fill("#graph-find", "")
    page.select_option("#graph-status", "failed")
    assert shows(page, ["b0150"]), "a step that never ran because of it is no failure"
    assert page.text_content("#graph-found").startswith("1 of 302 steps")
    assert in_view(page, "b0150"), "what is left shown is in view"
    console.shot(page, "graph-302-steps-failed-only")
    page.select_option("#graph-status", "upstream-failed")
    assert shows(page, ["end"])
    page.uncheck("#graph-hide")
    page.select_option("#graph-status", "")
    assert shows(page, ["start", "end", *(f"b{i:04d}" for i in range(300))])

    # The keyboard: Tab reaches the canvas, arrows move between steps, Enter selects.
    page.click("[data-graph=fold-all]")
    page.focus("#graph-find")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "graph":
            break
    assert page.evaluate("() => document.activeElement.id") == "graph"
    page.keyboard.press("ArrowRight")
    assert page.text_content("#graph-says").startswith("Step start")
    page.keyboard.press("ArrowRight")
    assert page.text_content("#graph-says").startswith("+300 steps")
    page.keyboard.press("ArrowRight")
    assert page.text_content("#graph-says").startswith("Step end")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.forgeRun.selected === 'end'")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")  # opens the group
    page.wait_for_function("() => window.forgeGraph.view.cy.getElementById('b0000').visible()")
    page.keyboard.press("+")
    page.keyboard.press("0")
    assert page.evaluate(ZOOM) <= 1.5

    # On a phone the tools wrap inside the card.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("() => document.querySelector('.graph-tools').getBoundingClientRect().right") <= 390
    try:
        page.wait_for_function("() => { const cy = window.forgeGraph.view.cy; return cy.width() < 390 && "
                               "cy.nodes().filter((n) => n.visible()).some((n) => { const p = n.renderedPosition(); "
                               "return p.x > 0 && p.x < cy.width() && p.y > 0 && p.y < cy.height(); }); }",
                               timeout=15_000)
    except Exception:
        raise AssertionError(page.evaluate("() => { const cy = window.forgeGraph.view.cy; return [cy.width(), "
                                           "cy.container().clientWidth, cy.zoom(), cy.pan(), cy.nodes().filter((n) =>"
                                           " n.visible()).map((n) => n.renderedPosition()).slice(0, 5)]; }")) from None
    page.locator(".graph-card").screenshot(path=str(console.shots / "graph-302-steps-390px.png"))
    page.set_viewport_size({"width": 1440, "height": 1000})

    # Full screen for the graph's card, and back.
    page.click("[data-graph=fullscreen]")
    page.wait_for_function("() => document.fullscreenElement === document.querySelector('.graph-card')")
    page.wait_for_function("() => window.forgeGraph.view.cy.height() > 600")
    console.shot(page, "graph-302-steps-full-screen")
    page.click("[data-graph=fullscreen]")
    page.wait_for_function("() => document.fullscreenElement === null")

    # The workflow's page folds the same fan-out and opens it on a click.
    page.goto(console.url + "/workflows/wide/")
    page.wait_for_function(DRAWN)
    page.click("[data-graph=fit]")
    assert len(page.evaluate(SHOWN)) == 3 and page.evaluate(ZOOM) * 11 >= 7
    assert group_label(page) == "+300 steps\nb0000 … b0299"
    assert page.is_hidden("#graph-status"), "a workflow's steps have no state to filter on"
    console.shot(page, "graph-302-steps-workflow-page")
    click_node(page, group_id(page))
    page.wait_for_function("() => window.forgeGraph.view.cy.getElementById('b0299').visible()")
    page.fill("#graph-find", "b0299")
    page.press("#graph-find", "Enter")
    assert centred(page, "b0299")
