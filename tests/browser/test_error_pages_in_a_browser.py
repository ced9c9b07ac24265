"""A person in no group meets the console's own 403 page: its layout, why they are refused, and a Log out button
that logs them out; a missing page is the console's 404, with the navigation."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_otto_in_no_group_reads_why_and_logs_out(console, browser):
    otto = console.login(browser, "otto")
    response = otto.goto(console.url + "/runs/")
    assert response.status == 403
    assert otto.inner_text("h1") == "You may not open this page"
    assert "You are in no group of this console: ask an admin to add you to one." in otto.inner_text("main")
    assert "You are logged in as otto" in otto.inner_text("main")
    assert otto.locator("link[rel=stylesheet][href*='console']").count() >= 1
    assert otto.evaluate("() => getComputedStyle(document.querySelector('.topbar')).display") == "flex"  # styled
    console.shot(otto, "403-otto")
    otto.locator("main").get_by_role("button", name="Log out").click()
    otto.wait_for_url(re.compile(r"/login/$"))
    assert otto.goto(console.url + "/runs/").url.startswith(console.url + "/login/")  # logged out: asked again

    olive = console.login(browser, "olive")
    response = olive.goto(console.url + "/runs/999999/")
    assert response.status == 404 and "No Run matches the given query." in olive.inner_text("main")
    olive.locator("nav[aria-label=main]").get_by_role("link", name="Runs").click()
    olive.wait_for_url(re.compile(r"/runs/$"))
    console.shot(olive, "404-olive")
