"""/api/v1/docs/ in Chromium: Swagger UI (served from the sidecar's static files, under the console's policy) lists
every operation of the API's document, and Try it out works, with the console's session for a person signed
in, and with a token given to Authorize for anyone else; no script error and no policy violation on the way."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.console import REPORT_VIOLATIONS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]
METHODS = {"get", "post", "put", "patch", "delete"}
ME = "#operations-me-me"


def operations(page, console) -> dict[str, list[tuple[str, str]]]:
    """The operations by tag, (METHOD, path), of the document the page is given (docs/api/openapi.yaml's, which
    tests/forge/api/test_openapi_committed.py holds to the code)."""
    by_tag: dict[str, list[tuple[str, str]]] = {}
    for path, item in page.request.get(console.url + "/api/v1/schema/?format=json").json()["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                for tag in operation.get("tags") or ["default"]:
                    by_tag.setdefault(tag, []).append((method.upper(), path))
    return by_tag


def listen(page) -> list[str]:
    """What went wrong in the page: script errors, and errors it logged (a refused resource, a policy's refusal)."""
    wrong: list[str] = []
    page.on("pageerror", lambda error: wrong.append(f"pageerror: {error}"))
    page.on("console", lambda message: wrong.append(f"console: {message.text}") if message.type == "error" else None)
    return wrong


def shot(console, page, name: str) -> None:
    page.screenshot(path=str(console.shots / f"{name}.png"), caret="initial")


def open_docs(console, page) -> None:
    page.goto(console.url + "/api/v1/docs/")
    expect(page.locator(".opblock-tag-section").first).to_be_visible(timeout=60_000)


def me_tried(page) -> dict:
    """GET /api/v1/me through Try it out / Execute; the answer's status and body as shown."""
    block = page.locator(ME)
    block.locator(".opblock-summary").first.click()
    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    row = block.locator(".live-responses-table .response").first
    expect(row).to_be_visible(timeout=30_000)
    block.scroll_into_view_if_needed()
    return {"status": row.locator(".response-col_status").inner_text().strip(),
            "body": json.loads(row.locator(".highlight-code pre").first.inner_text())}


def test_the_docs_list_every_operation_and_try_it_out_works_with_the_session(console, browser):
    page = console.login(browser, "adam")
    wrong = listen(page)
    open_docs(console, page)
    expect(page.locator("#how-to-try")).to_contain_text("Signed in to the console as adam: Try it out acts as you")
    by_tag = operations(page, console)
    assert "runs" in by_tag and len(by_tag["runs"]) >= 8
    for tag, listed in by_tag.items():
        section = page.locator(".opblock-tag-section", has=page.locator(f"#operations-tag-{tag}"))
        shown = [(s.locator(".opblock-summary-method").inner_text().strip(),
                  s.locator(".opblock-summary-path").get_attribute("data-path"))
                 for s in section.locator(".opblock-summary").all()]
        assert sorted(shown) == sorted(listed), tag
    runs = page.locator("#operations-tag-runs")
    runs.scroll_into_view_if_needed()
    expect(page.locator(".opblock-summary-path[data-path='/api/v1/runs/{id}/events']")).to_be_visible()
    shot(console, page, "api-docs-runs")

    answer = me_tried(page)
    assert answer["status"] == "200"
    assert answer["body"]["username"] == "adam" and answer["body"]["token"] is None  # the console's session
    shot(console, page, "api-docs-me-session")

    block = page.locator("#operations-workflows-workflow_validate")  # a POST: the session's CSRF token goes too
    block.locator(".opblock-summary").first.click()
    block.locator("button.try-out__btn").click()
    block.locator("textarea.body-param__text").fill(json.dumps(
        {"yaml": "name: tried\nsteps:\n  - {id: only, agent: mock, command: hi}\n"}))
    block.locator("button.execute").click()
    row = block.locator(".live-responses-table .response").first
    expect(row.locator(".response-col_status")).to_have_text("200", timeout=30_000)
    assert json.loads(row.locator(".highlight-code pre").first.inner_text())["valid"] is True
    assert not wrong, wrong


def test_anyone_else_authorizes_with_a_token(console, browser):
    secret = console.deployment.query(
        "from django.contrib.auth.models import User\nfrom forge.accounts.tokens import token_create\n"
        "_, result = token_create(user=User.objects.get(username='april'), name='docs', scopes=['runs:read'], days=1)")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    console.contexts.append(context)  # closed with the console; its violations are reported by the page's hook
    context.expose_function("forgeCspViolation", lambda said: console.violations.append(f"visitor: {said}"))
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    wrong = listen(page)
    open_docs(console, page)
    expect(page.locator("#how-to-try")).to_contain_text("press Authorize and give bearerAuth a token made on My tokens")
    login = page.locator("#how-to-try a", has_text="sign in to the console")
    assert login.get_attribute("href") == "/login/?next=/api/v1/docs/"
    shot(console, page, "api-docs-visitor")

    block = page.locator(ME)
    block.locator(".opblock-summary").first.click()
    block.locator("button.try-out__btn").click()
    with page.expect_response(lambda r: r.url.endswith("/api/v1/me")) as signed_out:
        block.locator("button.execute").click()
    assert signed_out.value.status == 401  # no session, no token: the page says nothing is allowed without one
    wrong.clear()  # the browser logs the refused request as an error, rightly
    block.locator("button.try-out__btn").click()  # Cancel

    page.click("button.authorize")
    dialog = page.locator(".dialog-ux .modal-ux")
    scheme = dialog.locator(".auth-container", has_text="bearerAuth")
    scheme.locator("input").fill(secret)
    scheme.locator("button.authorize").click()
    expect(scheme.get_by_role("heading", name="Authorized")).to_be_visible()
    shot(console, page, "api-docs-authorized")
    dialog.locator("button.close-modal").click()

    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    row = block.locator(".live-responses-table .response").first
    expect(row.locator(".response-col_status")).to_have_text("200", timeout=30_000)
    body = json.loads(row.locator(".highlight-code pre").first.inner_text())
    assert body["username"] == "april" and body["token"]["scopes"] == ["runs:read"]
    block.scroll_into_view_if_needed()
    shot(console, page, "api-docs-me-token")
    assert not wrong, wrong
