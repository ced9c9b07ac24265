"""The editor's inspector as a person uses it while the server answers, on a page that holds the inspector alone
and answers its patches as the test says (window.answer: made, or refused with a message): a redraw keeps what is
being typed (its value, focus and caret) and says when the step went; a refused value is shown with its refusal
and goes back to the text's value; a screen reader hears a field's verdict change once, not every key."""

from __future__ import annotations

import pytest

from tests.browser.editor_graph_page import edge, serve_fixture, step

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>inspector</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="editor/graph_edit.css"></head>
<body><aside id="inspector" style="width:420px"></aside><button id="elsewhere">elsewhere</button>
<script type="module" src="inspector_fixture.js"></script></body></html>
"""

# What the editor page does with the inspector, minus the server: each patch is recorded and answered when the
# test says; what the live region announces is recorded as it changes.
FIXTURE = """
import { createInspector } from "./editor/inspector.js";
const schema = await (await fetch("schema.json")).json();
const said = (window.said = { ops: [], heard: [] });
const waiting = [];
const inspector = createInspector(document.getElementById("inspector"), { schema,
  onPatch: (op) => new Promise((resolve) => { said.ops.push(op); waiting.push(resolve); }), onSelect: () => {} });
window.answer = (result) => waiting.shift()(result || undefined);
window.show = ([s, o, p]) => inspector.show(s, o, p);
const live = document.querySelector("#inspector [aria-live=polite]");
if (live) new MutationObserver(() => { if (live.textContent.trim()) said.heard.push(live.textContent.trim()); })
  .observe(live, { childList: true, characterData: true, subtree: true });
window.fixtureReady = true;
"""


def outline(**summarize):
    sid = summarize.pop("id", "summarize")
    fields = {"command": "sum it up", "stdin": "${fetch.stdout}", "retry": {"max_retries": 2}, **summarize}
    return {"parsed": True, "steps": [step("fetch", agent="shell", command="curl example.org"),
                                      step(sid, agent="mock", **fields)],
            "edges": [edge("fetch", "summarize", False, ["stdin"])]}


@pytest.fixture
def page(browser, tmp_path):
    folder = tmp_path / "site"
    url, server = serve_fixture(folder)
    (folder / "inspector.html").write_text(PAGE)
    (folder / "inspector_fixture.js").write_text(FIXTURE)
    context = browser.new_context(viewport={"width": 700, "height": 1100})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url.replace("index.html", "inspector.html"))
    page.wait_for_function("() => window.fixtureReady === true", timeout=30_000)
    yield page
    context.close()
    server.shutdown()
    assert not errors, errors


def show(page, o, sid="summarize", problems=None):
    s = next((x for x in o["steps"] if x["id"] == sid), None)
    page.evaluate("(args) => window.show(args)", [s, o, problems or []])


def ops(page, n):
    page.wait_for_function("(n) => window.said.ops.length >= n", arg=n, timeout=30_000)
    return page.evaluate("() => window.said.ops")


def field(page, path):
    return page.locator(f'#inspector [data-path="{path}"]')


def message(page, path):
    """The message tied to a field by its aria-describedby."""
    return page.locator("#" + field(page, path).get_attribute("aria-describedby"))


def test_a_redraw_keeps_the_field_being_typed_and_says_when_its_step_went(page):
    show(page, outline())
    field(page, "retry.max_retries").fill("many")  # not sent: it does not check; left as it is
    field(page, "name").fill("Sum")  # committed when left: its answer is the new outline below
    command = field(page, "command")
    command.click()
    command.press("End")
    page.keyboard.type(", briefly")
    command.press("ArrowLeft")
    command.press("ArrowLeft")  # the caret two characters before the end
    assert ops(page, 1) == [{"op": "field.set", "id": "summarize", "path": ["name"], "value": "Sum"}]
    # the answer: the name is in the text, and the stdin changed there meanwhile
    page.evaluate("() => window.answer()")
    show(page, outline(name="Sum", stdin="${fetch.stderr}"))
    page.wait_for_function("() => document.querySelector('#inspector [data-path=stdin]').value === '${fetch.stderr}'",
                           timeout=30_000)
    assert command.input_value() == "sum it up, briefly"
    assert page.evaluate("() => [document.activeElement.dataset.path, document.activeElement.selectionStart,"
                         " document.activeElement.selectionEnd]") == ["command", 16, 16]
    assert field(page, "name").input_value() == "Sum"
    assert field(page, "retry.max_retries").input_value() == "many"
    assert "must be a number" in message(page, "retry.max_retries").inner_text()
    page.keyboard.type("!")  # the caret is where it was
    assert command.input_value() == "sum it up, brief!ly"
    # the step renamed in the text: what is typed stays, and the inspector says so
    show(page, outline(id="digest"), sid="digest")
    page.wait_for_function("() => document.querySelector('#inspector [data-path=id]').value === 'digest'", timeout=30_000)
    assert command.input_value() == "sum it up, brief!ly"
    assert "summarize is now called digest" in page.locator("#inspector .inspector-notice").inner_text()
    # the step removed from the text: the inspector says what was typed and not applied
    gone = {"parsed": True, "steps": [step("fetch", agent="shell")], "edges": []}
    page.evaluate("(o) => window.show([null, o, []])", gone)
    notice = page.locator("#inspector .inspector-notice")
    notice.wait_for(timeout=30_000)
    assert "digest is no longer in the text" in notice.inner_text()
    assert "sum it up, brief!ly" in notice.inner_text() and "many" in notice.inner_text()
    assert len(page.evaluate("() => window.said.ops")) == 1


def test_a_refused_value_is_shown_with_its_refusal_and_goes_back_to_the_texts(page, tmp_path):
    show(page, outline())
    retries = field(page, "retry.max_retries")
    retries.fill("7")
    retries.press("Enter")
    assert ops(page, 1)[-1] == {"op": "field.set", "id": "summarize", "path": ["retry", "max_retries"], "value": 7}
    page.evaluate("() => window.answer({refused: 'a mock agent retries 3 times at most'})")
    said = message(page, "retry.max_retries")
    page.wait_for_function("(id) => document.getElementById(id).textContent.includes('3 times at most')",
                           arg=retries.get_attribute("aria-describedby"), timeout=30_000)
    # focused: the refused value stays to be corrected; Escape takes the text's value back, the refusal stays said
    assert retries.input_value() == "7" and retries.get_attribute("aria-invalid") == "true"
    retries.locator("xpath=ancestor::fieldset[1]").screenshot(path=str(tmp_path / "inspector-refused.png"))
    retries.press("Escape")
    assert retries.input_value() == "2" and retries.get_attribute("aria-invalid") == "false"
    assert "not changed" in said.inner_text() and "3 times at most" in said.inner_text()
    # corrected while focused: sent
    retries.fill("3.0")
    retries.press("Enter")
    assert ops(page, 2)[-1]["value"] == 3
    page.evaluate("() => window.answer()")
    show(page, outline(retry={"max_retries": 3}))  # the answer: the field shows the text's value now
    page.wait_for_function("() => document.querySelector('#inspector [data-path=\"retry.max_retries\"]').value === '3'",
                           timeout=30_000)
    # left before the refusal came: the field shows the text's value at once, with the refusal
    command = field(page, "command")
    command.fill("rm -rf /")
    page.locator("#elsewhere").focus()
    assert ops(page, 3)[-1] == {"op": "field.set", "id": "summarize", "path": ["command"], "value": "rm -rf /"}
    page.evaluate("() => window.answer({refused: 'that command is not allowed'})")
    page.wait_for_function("() => document.querySelector('#inspector [data-path=command]').value === 'sum it up'",
                           timeout=30_000)
    assert "not allowed" in message(page, "command").inner_text()
    # a redraw of the same text keeps the refusal said
    show(page, outline(), problems=[{"severity": "warning", "code": "x", "message": "a warning"}])
    page.locator("#inspector .inspector-problems").wait_for(timeout=30_000)
    assert "not allowed" in message(page, "command").inner_text()
    assert field(page, "command").input_value() == "sum it up"
    field(page, "command").locator("xpath=..").screenshot(path=str(tmp_path / "inspector-refused-left.png"))


def test_one_polite_live_region_says_a_change_of_verdict_not_each_key(page):
    show(page, outline())
    assert page.locator("#inspector [role=alert]").count() == 0
    assert page.locator("#inspector [aria-live]").count() == 1
    assert page.locator("#inspector [aria-live=polite]").count() == 1
    for node in page.locator("#inspector [data-path]").all():
        assert page.locator("#" + node.get_attribute("aria-describedby")).count() == 1
    retries = field(page, "retry.max_retries")
    retries.click()
    retries.press("Control+a")
    page.keyboard.type("many")  # a problem from the first key: said once
    page.wait_for_function("() => window.said.heard.length >= 1", timeout=30_000)
    retries.press("Control+a")
    page.keyboard.type("12")  # fine again from the first key: said once
    page.wait_for_function("() => window.said.heard.length >= 2", timeout=30_000)
    retries.press("Enter")
    ops(page, 1)
    page.evaluate("() => window.answer({refused: 'too many retries'})")
    page.wait_for_function("() => window.said.heard.length >= 3", timeout=30_000)
    heard = page.evaluate("() => window.said.heard")
    assert len(heard) == 3, heard
    assert "must be a number" in heard[0] and "max retries" in heard[1] and "too many retries" in heard[2]
