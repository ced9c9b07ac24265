"""The console on a phone (390 x 844) and on a desktop (1440 wide): no page is wider than the screen, whatever
it holds (the check measures the page, not particular parts), the navigation folds behind a Menu button that
opens and whose links lead where they say."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_console_in_a_browser import FAILS_LATE, NEEDS_A_YES, save, start_runs

pytestmark = pytest.mark.slow
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 1000}
WIDTH = "() => document.documentElement.scrollWidth"
# The outermost elements reaching past the screen's right edge, to say what made a page too wide.
OVERFLOWING = """() => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .filter((e) => !e.parentElement.closest("*") || e.parentElement.getBoundingClientRect().right
                 <= document.documentElement.clientWidth + 1)
  .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${[...e.classList].join(".")}`
                         + ` (${Math.round(e.getBoundingClientRect().right)}px)`)"""
RUN_DRAWN = "() => window.forgeRun && window.forgeRun.drawnAt !== null"


def failed_run(console) -> int:
    run_id = console.deployment.query(
        "from forge.runs import services\nfrom forge.workflows.models import Workflow\n"
        "result = services.run_start(user=None, version=Workflow.objects.get(name='fails_late').latest_version()).pk")
    return run_id


def pages(console, waiting: int, failed: int) -> dict[str, tuple[str, str | None]]:
    """Each page a person reads: its address, and what shows it is drawn (None: loaded is drawn)."""
    return {
        "dashboard": ("/", None),
        "workflows": ("/workflows/", None),
        "workflow": ("/workflows/needs_a_yes/", "() => window.forgeWorkflow && window.forgeWorkflow.drawnAt !== null"),
        "runs": ("/runs/", None),
        "run": (f"/runs/{waiting}/", RUN_DRAWN),
        "failed-run": (f"/runs/{failed}/", "() => window.forgeRun && window.forgeRun.runStatus === 'failed'"
                                           " && window.forgeRun.drawnAt !== null"),
        "approvals": ("/approvals/", None),
        "audit": ("/audit/", None),
        "spend": ("/spend/", None),
        "restart-plan": (f"/runs/{failed}/restart/?step=load", None),
    }


def open_page(console, page, path: str, drawn: str | None) -> None:
    page.goto(console.url + path)
    page.wait_for_load_state()
    if drawn:
        page.wait_for_function(drawn)


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_every_page_fits_a_phone_and_a_desktop_and_the_menu_opens(console, browser):
    save(console, NEEDS_A_YES)
    save(console, FAILS_LATE)
    (waiting,) = start_runs(console, "A vendor with a rather long name, Incorporated and Partners")
    failed = failed_run(console)
    context = browser.new_context(viewport=PHONE, device_scale_factor=1)
    adam = console.login_in(context, "adam")
    adam.goto(console.url + f"/runs/{failed}/")
    adam.wait_for_function("() => window.forgeRun && window.forgeRun.runStatus === 'failed'")

    too_wide = {}
    for size, viewport in (("390", PHONE), ("1440", DESKTOP)):
        adam.set_viewport_size(viewport)
        for name, (path, drawn) in pages(console, waiting, failed).items():
            open_page(console, adam, path, drawn)
            console.shot(adam, f"{name}-{size}")
            if adam.evaluate(WIDTH) > viewport["width"]:
                too_wide[f"{name} at {size}"] = (adam.evaluate(WIDTH), adam.evaluate(OVERFLOWING))
        open_page(console, adam, f"/runs/{failed}/", RUN_DRAWN)
        adam.evaluate("() => window.forgeRun.select('load')")
        adam.wait_for_selector(".step-panel[data-step=load]")
        console.shot(adam, f"step-panel-{size}")
        if adam.evaluate(WIDTH) > viewport["width"]:
            too_wide[f"step panel at {size}"] = (adam.evaluate(WIDTH), adam.evaluate(OVERFLOWING))
    assert not too_wide, f"pages wider than the screen (px, and what reaches past it): {too_wide}"

    adam.set_viewport_size(PHONE)
    adam.goto(console.url + "/")
    nav = adam.locator("nav[aria-label=main]")
    assert not nav.is_visible() and adam.locator(".menu-button").is_visible()
    adam.click(".menu-button")
    assert nav.is_visible() and adam.get_attribute(".menu-button", "aria-expanded") == "true"
    console.shot(adam, "menu-open-390")
    for link, path in (("Runs", "/runs/"), ("Audit", "/audit/"), ("Workflows", "/workflows/")):
        if adam.get_attribute(".menu-button", "aria-expanded") != "true":
            adam.click(".menu-button")
        nav.get_by_role("link", name=link).click()
        adam.wait_for_url(re.compile(re.escape(console.url + path) + "$"))
        assert adam.evaluate(WIDTH) <= PHONE["width"]
    adam.click(".menu-button")
    adam.get_by_role("button", name="Log out").click()
    adam.wait_for_url(re.compile(r"/login/"))

    adam = console.login_in(context, "adam")
    adam.set_viewport_size(DESKTOP)
    assert adam.locator("nav[aria-label=main]").is_visible() and not adam.locator(".menu-button").is_visible()
