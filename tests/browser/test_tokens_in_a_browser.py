"""My tokens in Chromium (issue 21, point 4): a person makes a token from the link beside their name, sees its
secret once, finds it gone after a reload, and revokes the token after confirming."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]


def shot(console, page, name: str) -> None:
    """A screenshot that leaves the inputs as they were: Playwright's default hides the caret with a style
    attribute it empties afterwards, which htmx's next swap copies onto the new inputs, and the page's CSP
    refuses."""
    page.screenshot(path=str(console.shots / f"{name}.png"), full_page=True, caret="initial")


def test_a_token_is_made_shown_once_and_revoked(console, browser):
    page = console.login(browser, "olive")
    page.click("header >> text=My tokens")
    page.wait_for_selector("h1:has-text('My tokens')")
    assert "You have no token yet." in page.inner_text("#tokens-table")
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page were loaded again

    page.fill("#token-name", "CI deploys")
    page.check("input[name=scopes][value='runs:read']")
    page.check("input[name=scopes][value='runs:write']")
    page.fill("#token-days", "7")
    page.click("#token-form button[type=submit]")
    secret = page.locator("#token-secret")
    secret.wait_for()
    value = secret.input_value()
    assert value.startswith("forge_pat_") and len(value) == 53
    assert page.evaluate("() => window.sameDocument") is True  # swapped in place, the address unchanged
    assert page.url == console.url + "/tokens/"
    assert "the only time it is shown" in page.inner_text("#token-made")
    row = page.locator("#tokens-table tbody tr", has_text="CI deploys")
    assert value[:16] in row.inner_text() and "runs:read runs:write" in row.inner_text()
    shot(console, page, "tokens-made")

    page.reload()
    page.wait_for_selector("h1:has-text('My tokens')")
    assert page.locator("#token-secret").count() == 0 and value not in page.content()
    row = page.locator("#tokens-table tbody tr", has_text="CI deploys")
    assert row.locator("[data-field=state]").inner_text() == "active"

    row.locator("button", has_text="Revoke…").click()
    page.locator("#token-confirm").wait_for()
    assert "Revoke CI deploys" in page.inner_text("#token-confirm")
    shot(console, page, "tokens-confirm-revoke")
    page.click("#token-confirm button[type=submit]")
    page.locator("#token-said").wait_for()
    assert "Revoked CI deploys" in page.inner_text("#token-said")
    row = page.locator("#tokens-table tbody tr", has_text="CI deploys")
    assert row.locator("[data-field=state]").inner_text().startswith("revoked ")
    assert row.locator("button", has_text="Revoke…").count() == 0
    shot(console, page, "tokens-revoked")
