"""The editor's graph, palette and inspector (issue 20, points 2, 3, 8, 11, 12) as a person uses them, on a page
that holds them alone and records what they ask (the editor page wires the same calls to the server): a palette
button asks for a step.add, dragging a step's handle onto another asks for an edge.add, Delete asks for a
step.remove, arrow keys move the selection, an implicit edge is drawn dashed and Delete leaves it (saying where it
comes from), the inspector checks a field as it is typed and asks for field.set / step.rename / edge.add, a drag is
a placement that ELK never moves, problems show as badges, and a new outline changes only what changed."""

from __future__ import annotations

import json

import pytest

from tests.browser.editor_graph_page import big_outline, edge, serve_fixture, step

# fetch -> summarize (implicit: summarize reads fetch's stdout), summarize -> review -> publish (explicit).
OUTLINE = {"parsed": True, "error": None, "sequential": False, "name": "news", "steps": [
    step("fetch", agent="shell", command="curl example.org"),
    step("summarize", agent="mock", command="sum it up", stdin="${fetch.stdout}"),
    step("review", kind="approval", approval="required", depends_on=["summarize"]),
    step("publish", agent="shell", command="publish", depends_on=["review"]),
], "edges": [edge("fetch", "summarize", False, ["stdin"]), edge("summarize", "review"), edge("review", "publish")]}


@pytest.fixture
def page(browser, tmp_path, request):
    url, server = serve_fixture(tmp_path / "site")
    url += getattr(request, "param", "")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_function("() => window.fixtureReady === true", timeout=30_000)
    yield page
    context.close()
    server.shutdown()
    assert not errors, errors


def show(page, outline=OUTLINE, placements=None, problems=None):
    page.evaluate("([o, pl, pr]) => window.show(o, pl, pr)", [outline, placements or {}, problems or {}])


def ops(page) -> list[dict]:
    return page.evaluate("() => window.said.ops")


def wait_ops(page, n: int) -> list[dict]:
    page.wait_for_function("(n) => window.said.ops.length >= n", arg=n, timeout=30_000)
    return ops(page)


def at(page, node_id: str) -> dict:
    """Where a node is on the screen (its centre)."""
    p = page.evaluate("(id) => window.graph.cy.getElementById(id).renderedPosition()", node_id)
    box = page.locator(".editor-graph-canvas").bounding_box()
    return {"x": box["x"] + p["x"], "y": box["y"] + p["y"]}


def click(page, node_id: str) -> None:
    p = at(page, node_id)
    page.mouse.click(p["x"], p["y"])


def selected(page) -> list[str]:
    return page.evaluate("() => window.graph.cy.$(':selected').map((e) => e.id())")


def drawn(page, n=4):
    """Waits until `n` steps are drawn where ELK put them (nothing moves after)."""
    page.wait_for_function("(n) => window.graph.cy.nodes().length === n"
                           " && document.getElementById('graph').dataset.layout === 'done'", arg=n, timeout=30_000)


def test_the_palette_adds_a_step_of_each_kind_with_a_fresh_id(page, tmp_path):
    show(page)
    drawn(page)
    labels = page.locator(".palette button").evaluate_all("(bs) => bs.map((b) => b.getAttribute('aria-label'))")
    assert labels == ["Add a step run by the agent mock", "Add a step run by the agent shell", "Add an approval step",
                      "Add a step that runs another workflow", "Add a step from the step library",
                      "Add a loop step (run by mock)"]
    page.get_by_role("button", name="Add an approval step").click()
    assert wait_ops(page, 1)[-1] == {"op": "step.add", "step": {"id": "approval_1", "approval": "required"}, "after": None}
    click(page, "review")  # a new step goes after the selected one
    page.get_by_role("button", name="Add a step run by the agent shell").click()
    assert wait_ops(page, 2)[-1] == {"op": "step.add", "step": {"id": "shell_1", "agent": "shell", "command": ""}, "after": "review"}
    page.get_by_role("button", name="Add a loop step (run by mock)").click()
    assert wait_ops(page, 3)[-1]["step"] == {"id": "loop_1", "agent": "mock", "command": "", "loop": {"max_iterations": 3}}
    page.screenshot(path=str(tmp_path / "editor-graph-palette.png"))


def test_dragging_a_handle_onto_a_step_connects_them(page):
    show(page)
    drawn(page)
    start = at(page, "fetch")
    page.mouse.move(start["x"], start["y"])
    handle = page.get_by_role("button", name="Connect from fetch: drag onto the step that depends on it")
    handle.wait_for(state="visible", timeout=30_000)
    box = handle.bounding_box()
    end = at(page, "publish")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move((box["x"] + end["x"]) / 2, (box["y"] + end["y"]) / 2, steps=5)
    page.mouse.move(end["x"], end["y"], steps=5)
    page.mouse.up()
    assert wait_ops(page, 1) == [{"op": "edge.add", "from": "fetch", "to": "publish"}]
    assert "publish now depends on fetch" in page.locator(".editor-graph-says").inner_text()


def test_delete_removes_the_selected_step_and_arrows_move_the_selection(page):
    show(page)
    drawn(page)
    click(page, "summarize")
    assert selected(page) == ["summarize"]
    page.keyboard.press("ArrowRight")
    assert selected(page) == ["review"]
    page.keyboard.press("ArrowRight")
    assert selected(page) == ["publish"]
    page.keyboard.press("ArrowLeft")
    assert selected(page) == ["review"]
    assert page.evaluate("() => window.said.selected") == ["summarize", "review", "publish", "review"]
    assert page.evaluate("() => document.activeElement.classList.contains('editor-graph-canvas')")
    page.keyboard.press("Delete")
    assert wait_ops(page, 1) == [{"op": "step.remove", "id": "review"}]
    # Nothing is drawn differently until the server's outline says so.
    assert page.evaluate("() => window.graph.cy.getElementById('review').length") == 1


def test_delete_on_several_selected_steps_asks_for_one_patch(page):
    """Deleting a selection is one gesture: one selection.remove (one undo step), not a patch per step."""
    show(page)
    drawn(page)
    click(page, "summarize")
    page.keyboard.down("Shift")
    click(page, "publish")
    page.keyboard.up("Shift")
    assert sorted(selected(page)) == ["publish", "summarize"]
    page.keyboard.press("Delete")
    removal = wait_ops(page, 1)  # the Delete key's handler asks for every patch it asks for at once
    assert len(removal) == 1 and removal[0]["op"] == "selection.remove"
    assert sorted(removal[0]["ids"]) == ["publish", "summarize"]


def test_an_implicit_edge_is_dashed_and_not_deletable_and_an_explicit_one_is(page):
    show(page)
    drawn(page)
    style = page.evaluate("() => { const e = window.graph.cy.getElementById('fetch->summarize');"
                          " return [e.style('line-style'), window.graph.cy.getElementById('review->publish').style('line-style')]; }")
    assert style == ["dashed", "solid"]
    page.evaluate("() => window.graph.cy.getElementById('fetch->summarize').select()")
    page.locator(".editor-graph-canvas").focus()
    page.keyboard.press("Delete")
    says = page.locator(".editor-graph-says").inner_text()
    assert "Implicit edge fetch → summarize, from stdin" in says and "cannot be deleted" in says
    assert ops(page) == []
    assert page.get_by_role("button", name="Delete the selected steps or edge (Delete key)").is_disabled()
    # a click on the explicit edge's middle selects it; Delete asks for its removal
    mid = page.evaluate("() => window.graph.cy.getElementById('review->publish').renderedMidpoint()")
    box = page.locator(".editor-graph-canvas").bounding_box()
    page.evaluate("() => window.graph.cy.$(':selected').unselect()")
    page.mouse.click(box["x"] + mid["x"], box["y"] + mid["y"])
    assert selected(page) == ["review->publish"]
    page.keyboard.press("Delete")
    assert wait_ops(page, 1) == [{"op": "edge.remove", "from": "review", "to": "publish"}]


def test_the_inspector_checks_as_typed_and_asks_for_one_patch_a_field(page, tmp_path):
    show(page, problems={"publish": [{"severity": "error", "code": "unknown_agent", "message": "no agent is called shell"}]})
    drawn(page)
    click(page, "summarize")
    inspector = page.locator("#inspector")
    inspector.get_by_text("Step summarize (agent mock)").wait_for(timeout=30_000)
    assert "fetch — via stdin" in inspector.locator(".inspector-implicit").inner_text()
    # a number field: a word is refused where it is typed; a number in bounds is one field.set
    retries = inspector.locator('[data-path="retry.max_retries"]')
    retries.fill("many")
    assert "must be a number" in inspector.locator(".inspector-message:not(:empty)").first.inner_text()
    retries.fill("500")
    assert "must be at most 100" in inspector.locator(".inspector-message:not(:empty)").first.inner_text()
    assert ops(page) == []
    retries.fill("5")
    retries.press("Enter")
    assert wait_ops(page, 1)[-1] == {"op": "field.set", "id": "summarize", "path": ["retry", "max_retries"], "value": 5}
    # emptying a field unsets it
    command = inspector.locator('[data-path="command"]')
    command.fill("")
    command.blur()
    assert wait_ops(page, 2)[-1] == {"op": "field.unset", "id": "summarize", "path": ["command"]}
    # the id: checked, then one rename
    step_id = inspector.locator('[data-path="id"]')
    step_id.fill("Bad id")
    assert "an id is a lower-case letter" in inspector.locator(".inspector-message:not(:empty)").first.inner_text()
    step_id.fill("digest")
    step_id.press("Enter")
    assert wait_ops(page, 3)[-1] == {"op": "step.rename", "id": "summarize", "to": "digest"}
    # depends_on from the keyboard
    depends = inspector.locator('[data-path="depends_on"]')
    depends.fill("publish")
    depends.press("Enter")
    assert wait_ops(page, 4)[-1] == {"op": "edge.add", "from": "publish", "to": "summarize"}
    # a problem is a badge on its node, its messages in its title
    badge = page.locator(".editor-graph-badge")
    assert badge.inner_text() == "1" and "unknown_agent: no agent is called shell" in badge.get_attribute("title")
    assert "editor-graph-badge-error" in badge.get_attribute("class")
    page.screenshot(path=str(tmp_path / "editor-graph-inspector.png"))


def test_a_field_of_a_name_or_a_mapping_takes_either(page):
    """workflow_ref is a workflow's name or {name, version, args}: typed as text, or as JSON when it opens with {."""
    outline = {"parsed": True, "steps": [step("sub", kind="subworkflow", workflow_ref="other")], "edges": []}
    show(page, outline)
    drawn(page, 1)
    click(page, "sub")
    ref = page.locator('#inspector [data-path="workflow_ref"]')
    assert ref.input_value() == "other"
    ref.fill('{"name": "other", "version": 0}')
    assert "version must be at least 1" in page.locator("#inspector .inspector-message:not(:empty)").first.inner_text()
    ref.fill('{"name": "other", "version": 2}')
    ref.press("Enter")
    assert wait_ops(page, 1) == [{"op": "field.set", "id": "sub", "path": ["workflow_ref"], "value": {"name": "other", "version": 2}}]
    ref.fill("another")
    ref.press("Enter")
    assert wait_ops(page, 2)[-1] == {"op": "field.set", "id": "sub", "path": ["workflow_ref"], "value": "another"}


def test_enter_takes_the_keyboard_to_the_inspector(page):
    show(page)
    drawn(page)
    click(page, "publish")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.dataset.path") == "id"


def test_a_drag_is_a_placement_and_elk_never_moves_a_placed_step(page):
    show(page, placements={"review": {"x": 900, "y": 700}})
    drawn(page)
    assert page.evaluate("() => window.graph.cy.getElementById('review').position()") == {"x": 900, "y": 700}
    start = at(page, "fetch")
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"] + 40, start["y"] + 60, steps=6)
    page.mouse.up()
    page.wait_for_function("() => window.said.placed.length === 1", timeout=30_000)
    placed = page.evaluate("() => window.said.placed[0]")
    assert list(placed) == ["fetch"]
    assert ops(page) == []  # a move is no patch
    # a new outline (a step added) keeps every placed step where it was put
    grown = {**OUTLINE, "steps": [*OUTLINE["steps"], step("notify", agent="mock", command="tell", depends_on=["publish"])],
             "edges": [*OUTLINE["edges"], edge("publish", "notify")]}
    before = page.evaluate("() => window.graph.cy.getElementById('fetch').position()")
    show(page, grown, placements={"review": {"x": 900, "y": 700}})
    drawn(page, 5)
    assert page.evaluate("() => window.graph.cy.getElementById('review').position()") == {"x": 900, "y": 700}
    assert page.evaluate("() => window.graph.cy.getElementById('fetch').position()") == before
    notify = page.evaluate("() => window.graph.cy.getElementById('notify').position()")
    publish = page.evaluate("() => window.graph.cy.getElementById('publish').position()")
    assert notify["x"] > publish["x"]  # beside what it follows, not piled on anything


def test_a_new_outline_changes_only_what_changed(page):
    show(page)
    drawn(page)
    page.evaluate("() => window.graph.cy.elements().forEach((e) => e.scratch('_mark', 1))")
    changed = json.loads(json.dumps(OUTLINE))
    changed["steps"] = [s for s in changed["steps"] if s["id"] != "fetch"]
    changed["edges"] = [e for e in changed["edges"] if e["from"] != "fetch"]
    changed["steps"][0]["agent"] = "shell"  # summarize: another agent
    show(page, changed)
    page.wait_for_function("() => window.graph.cy.nodes().length === 3", timeout=30_000)
    kept = page.evaluate("() => window.graph.cy.elements().filter((e) => e.scratch('_mark')).map((e) => e.id()).sort()")
    assert kept == ["publish", "review", "review->publish", "summarize", "summarize->review"]
    assert page.evaluate("() => window.graph.cy.getElementById('summarize').data('label')") == "summarize\n(shell)"
    # a text that does not parse keeps the last drawing and says so
    show(page, {"parsed": False, "error": {"code": "yaml", "message": "bad", "line": 1, "column": 1}, "steps": [], "edges": []})
    assert page.evaluate("() => window.graph.cy.nodes().length") == 3
    assert "does not parse" in page.locator(".editor-graph-says").inner_text()
    show(page, changed)  # parsed again: the message goes
    assert page.locator(".editor-graph-says").inner_text() == ""


def test_copy_and_paste_and_duplicate_of_a_selection(page):
    show(page)
    drawn(page)
    click(page, "fetch")
    p = at(page, "publish")
    page.keyboard.down("Shift")
    page.mouse.click(p["x"], p["y"])
    page.keyboard.up("Shift")
    assert sorted(selected(page)) == ["fetch", "publish"]
    page.keyboard.press("Control+c")
    assert page.evaluate("() => window.said.copied") == [["fetch", "publish"]]
    page.keyboard.press("Control+v")
    assert page.evaluate("() => window.said.pastes") == 1
    assert page.get_by_role("button", name="Duplicate the selected step").is_disabled()
    click(page, "review")
    page.get_by_role("button", name="Duplicate the selected step").click()
    assert wait_ops(page, 1) == [{"op": "step.duplicate", "id": "review"}]


def test_a_long_chain_is_folded_and_opens_on_a_click(page, tmp_path):
    ids = [f"s{i:03d}" for i in range(60)]
    outline = {"parsed": True, "steps": [step(i, agent="mock") for i in ids],
               "edges": [edge(a, b) for a, b in zip(ids, ids[1:])]}
    show(page, outline)
    drawn(page, 3)  # the first step, the group of the 58 after it, the last step
    group = page.evaluate("() => window.graph.cy.nodes('[?group]').id()")
    assert page.evaluate("(g) => window.graph.cy.getElementById(g).data('label')", group) == "+58 steps\ns001 … s058"
    click(page, group)
    page.wait_for_function("() => window.graph.cy.nodes().filter((n) => n.visible() && !n.data('group')).length === 60",
                           timeout=30_000)
    page.screenshot(path=str(tmp_path / "editor-graph-chain.png"))


@pytest.mark.parametrize("page", ["?readonly"], indirect=True)
def test_read_only_the_graph_and_inspector_offer_no_edit_and_ask_for_nothing(page):
    show(page)
    drawn(page)
    assert page.locator(".palette button:enabled").count() == 0
    assert page.get_by_role("button", name="Delete the selected steps or edge (Delete key)").count() == 0
    click(page, "summarize")
    page.keyboard.press("Delete")
    p = at(page, "review")
    page.mouse.move(p["x"], p["y"])
    page.mouse.down()
    page.mouse.move(p["x"] + 50, p["y"] + 50, steps=5)
    page.mouse.up()
    assert page.locator(".editor-graph-handle").is_hidden()
    assert page.locator("#inspector input:enabled, #inspector textarea:enabled, #inspector select:enabled").count() == 0
    assert page.locator("#inspector").get_by_text("Step summarize (agent mock)").is_visible()
    assert page.evaluate("() => [window.said.ops, window.said.placed]") == [[], []]


PLACED = "name: placed\nsteps:\n  - {id: a, agent: mock, command: go}\n  - {id: b, agent: mock, command: go, depends_on: [a]}\n" \
         "  - {id: c, agent: mock, command: go, depends_on: [b]}\n"


@pytest.mark.parametrize("console", ["sqlite"], indirect=True)
def test_the_workflow_page_draws_a_step_where_a_person_placed_it_and_keeps_elk_for_the_rest(console, browser):
    from tests.browser.test_console_in_a_browser import save
    save(console, PLACED)
    console.deployment.query("from forge.workflows.models import StepPlacement, Workflow\n"
                             "StepPlacement.objects.create(workflow=Workflow.objects.get(name='placed'), step_id='b', x=500, y=400)\n"
                             "result = True")
    page = console.login(browser, "olive")
    page.goto(f"{console.url}/workflows/placed/")
    page.wait_for_function("() => window.forgeGraph && window.forgeGraph.view && window.forgeGraph.view.cy.nodes().length === 3",
                           timeout=30_000)
    # ELK's layout of the unplaced steps is kept for the version; the placed one is not in it
    kept = "from forge.workflows.models import GraphLayout\nresult = sorted(GraphLayout.objects.get().positions)"
    for _ in range(300):  # up to 30 s for the page's layout to reach the server
        if console.deployment.query("from forge.workflows.models import GraphLayout\nresult = GraphLayout.objects.exists()"):
            break
        page.wait_for_timeout(100)
    assert console.deployment.query(kept) == ["a", "c"]
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('b').position()") == {"x": 500, "y": 400}
    console.shot(page, "workflow-placed-step")
    # the next page draws at once from the kept layout and the placement
    page.reload()
    page.wait_for_function("() => window.forgeGraph && window.forgeGraph.view && window.forgeGraph.view.cy.nodes().length === 3",
                           timeout=30_000)
    assert page.evaluate("() => window.forgeGraph.view.cy.getElementById('b').position()") == {"x": 500, "y": 400}


def test_a_field_committed_with_enter_is_not_sent_again_when_the_field_is_left(page):
    show(page)
    drawn(page)
    click(page, "fetch")
    rename = page.locator("#inspector [data-path=id]")
    rename.fill("download")
    rename.press("Enter")
    name = page.locator("#inspector [data-path=name]")
    name.click()  # leaving the id field: its change event must not send the rename again
    name.fill("Fetch the page")
    name.press("Enter")
    rename.click()  # and leaving the name field does not set it again
    page.locator(".palette button").first.focus()
    assert ops(page) == [{"op": "step.rename", "id": "fetch", "to": "download"},
                         {"op": "field.set", "id": "fetch", "path": ["name"], "value": "Fetch the page"}]


def test_the_status_line_follows_the_selected_steps_problems(page):
    bad = {"summarize": [{"code": "unknown_key", "message": "unknown key 'colour'", "severity": "error", "step": "summarize"}]}
    show(page, problems=bad)
    drawn(page)
    click(page, "summarize")
    says = page.locator(".editor-graph-says")
    assert says.inner_text() == "Step summarize (agent mock), 1 problem: unknown key 'colour'"
    show(page)  # the problem fixed: the next outline has none
    assert says.inner_text() == "Step summarize (agent mock)"
    renamed = json.loads(json.dumps(OUTLINE).replace('"summarize"', '"digest"'))
    show(page, renamed)  # the step it named is gone (renamed): it names nothing until the page selects again
    assert says.inner_text() == ""
    page.evaluate("() => window.graph.select('digest')")
    assert says.inner_text() == "Step digest (agent mock)"
    page.evaluate("() => window.graph.select(null)")
    assert says.inner_text() == ""


def cut_off(page) -> list[str]:
    """The steps not wholly inside the graph's canvas."""
    return page.evaluate("""() => { const cy = window.graph.cy, w = cy.width(), h = cy.height();
      return cy.nodes().filter((n) => { const b = n.renderedBoundingBox({includeLabels: false});
        return b.x1 < 0 || b.y1 < 0 || b.x2 > w || b.y2 > h; }).map((n) => n.id()); }""")


# vendor_review's shape: six layers, wider than the canvas at zoom 1 but whole at a readable zoom.
VENDOR = {"parsed": True, "steps": [step(i, agent="mock") for i in
                                    ("triage", "classify", "security", "legal", "approval", "record", "notify")],
          "edges": [edge("triage", "classify"), edge("classify", "security"), edge("classify", "legal"),
                    edge("security", "approval"), edge("legal", "approval"), edge("approval", "record"),
                    edge("record", "notify")]}


def test_a_small_graph_stays_whole_in_view_after_each_change(page, tmp_path):
    show(page, VENDOR)
    drawn(page, 7)
    assert cut_off(page) == []
    outline = json.loads(json.dumps(VENDOR))
    for new, after in (("legal_2", "legal"), ("notify_copy", "notify"), ("extra", "notify_copy")):
        # What the editor does with a patch's answer: the new outline drawn, then the new step selected.
        outline["steps"].append(step(new, agent="mock"))
        outline["edges"].append(edge(after, new))
        show(page, outline)
        page.evaluate("(id) => window.graph.select(id)", new)
        drawn(page, len(outline["steps"]))
        assert cut_off(page) == [], new
        assert selected(page) == [new]
    page.screenshot(path=str(tmp_path / "editor-graph-small-after-changes.png"))
    outline["steps"] = [s for s in outline["steps"] if s["id"] != "extra"]  # a step deleted: still whole
    outline["edges"] = [e for e in outline["edges"] if "extra" not in (e["from"], e["to"])]
    show(page, outline)
    drawn(page, len(outline["steps"]))
    assert cut_off(page) == []


def test_on_a_large_graph_the_new_step_is_wholly_in_view(page):
    dag = big_outline(60, "dag")  # nothing folds, too wide to read whole
    show(page, dag)
    drawn(page, 60)
    dag["steps"].append(step("tail", agent="mock"))
    dag["edges"].append(edge("s0059", "tail"))
    show(page, dag)
    page.evaluate("() => window.graph.select('tail')")
    drawn(page, 61)
    assert "tail" not in cut_off(page)
    assert page.evaluate("() => window.graph.cy.zoom()") >= 7 / 11  # labels readable
