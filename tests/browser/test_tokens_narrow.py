"""My tokens on a phone (390 px): each token reads as a card whose expiry, last use, state and Revoke are in sight
without scrolling sideways, and Revoke works there; on a desktop the list stays one table row per token."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 1000}
NAME = "Nightly deploys of the billing service"
# Where an element is on the screen, and whether a tap at its middle lands on it (nothing clips or covers it).
WHERE = """(e) => { const r = e.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, tapped: e === hit || e.contains(hit)}; }"""


def shot(console, page, name: str) -> None:
    """As test_tokens_in_a_browser's: the caret left as it was (htmx would copy Playwright's hiding style onto the
    swapped inputs, which the page's policy refuses)."""
    page.screenshot(path=str(console.shots / f"{name}.png"), full_page=True, caret="initial")


def in_sight(locator, width: int, height: int) -> bool:
    box = locator.evaluate(WHERE)
    return box["tapped"] and 0 <= box["left"] and box["right"] <= width and 0 <= box["top"] and box["bottom"] <= height


def test_a_token_is_revoked_on_a_phone_and_the_desktop_keeps_its_table(console, browser):
    console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.accounts.tokens import token_create\n"
        f"token, _ = token_create(user=User.objects.get(username='olive'), name={NAME!r}, "
        "scopes=['runs:read', 'runs:write', 'approvals:decide'], days=30)\nresult = token.pk")
    page = console.login_in(browser.new_context(viewport=DESKTOP, device_scale_factor=1), "olive")

    page.goto(console.url + "/tokens/")
    row = page.locator("#tokens-table tbody tr", has_text=NAME)
    headers = page.locator("#tokens-table thead th")
    assert headers.count() == 8 and len({round(th.bounding_box()["y"]) for th in headers.all()}) == 1
    cells = row.locator("td")
    assert len({round(td.bounding_box()["y"]) for td in cells.all()}) == 1  # one line: a table row
    assert in_sight(row.locator("button", has_text="Revoke…"), DESKTOP["width"], DESKTOP["height"])
    shot(console, page, "tokens-1400")

    page.set_viewport_size(PHONE)
    page.reload()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert page.evaluate("() => document.querySelector('#tokens-table').scrollWidth"
                         " <= document.querySelector('#tokens-table').clientWidth")  # nothing hides sideways
    for label in ("Expires", "Last used", "State"):
        cell = row.locator(f"td[data-label='{label}']")
        cell.scroll_into_view_if_needed()
        assert in_sight(cell, PHONE["width"], PHONE["height"]), label
        words = cell.evaluate("(e) => getComputedStyle(e, '::before').content")
        assert words == f'"{label}"'  # each line says what it is
    assert row.locator("td[data-label='Last used']").inner_text() == "never"
    revoke = row.locator("button", has_text="Revoke…")
    revoke.scroll_into_view_if_needed()
    assert in_sight(revoke, PHONE["width"], PHONE["height"])
    box = revoke.bounding_box()
    assert box["height"] >= 32  # a finger's target, not a line of text
    shot(console, page, "tokens-390")

    revoke.click()
    page.locator("#token-confirm").wait_for()
    assert f"Revoke {NAME}" in page.inner_text("#token-confirm")
    page.click("#token-confirm button[type=submit]")
    page.locator("#token-said").wait_for()
    assert f"Revoked {NAME}" in page.inner_text("#token-said")
    row = page.locator("#tokens-table tbody tr", has_text=NAME)
    assert row.locator("[data-field=state]").inner_text().startswith("revoked ")
    assert row.locator("button", has_text="Revoke…").count() == 0
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    shot(console, page, "tokens-390-revoked")
