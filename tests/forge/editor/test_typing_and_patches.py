"""The typing request (text -> problems and outline), the draft as a reload reads it, and gestures as typed
patches on the page's text: the new text and its changes, written to the draft, a rename keeping its place."""

from __future__ import annotations

import json

import pytest

from forge.audit.models import AuditEvent
from forge.workflows.models import StepLibraryEntry, StepPlacement
from tests.typo_workflow import SAID, TYPO

from .conftest import SOURCE, Page, draft_new, draft_open, error_of, url, world_state

pytestmark = pytest.mark.django_db


def applied(text: str, changes: list[dict]) -> str:
    """The page's CodeMirror applying `changes` (offsets into the old text) as one transaction."""
    units = text.encode("utf-16-le")
    out, at = [], 0
    for change in changes:
        out += [units[2 * at:2 * change["from"]], change["insert"].encode("utf-16-le")]
        at = change["to"]
    return b"".join(out + [units[2 * at:]]).decode("utf-16-le")


def test_a_reload_reads_the_draft_with_its_outline_and_problems(operator, greeter):
    draft = draft_open(operator, greeter)
    body = Page(operator).get(url("editor_draft", draft)).json()
    assert {k: body[k] for k in ("id", "text", "revision", "workflow", "base_version", "latest_version", "valid",
                                 "dirty", "problems", "placements")} == {
        "id": draft.pk, "text": SOURCE, "revision": 0, "workflow": "greeter", "base_version": 1,
        "latest_version": 1, "valid": True, "dirty": False, "problems": [], "placements": {}}
    assert [s["id"] for s in body["outline"]["steps"]] == ["hello", "shout", "done"]
    assert draft_open(operator, greeter).pk == draft.pk  # one draft per person per workflow


def test_typing_keeps_the_text_and_answers_its_problems_with_their_lines(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    opened = AuditEvent.objects.count()  # the draft's creation, audited
    broken = SOURCE.replace("depends_on: [shout]", "depends_on: [shuot]")
    response = page.post(url("editor_text", draft), {"text": broken, "revision": 1})
    assert response.status_code == 200
    body = response.json()
    assert (body["revision"], body["valid"], body["dirty"]) == (1, False, True)
    assert [(p["code"], p["step"], p["line"], p["severity"]) for p in body["problems"]] == [
        ("unknown_dependency", "done", 15, "error")]
    assert [s["id"] for s in body["outline"]["steps"]] == ["hello", "shout", "done"]
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == (broken, 1)
    assert AuditEvent.objects.count() == opened  # private scratch


def test_a_warning_is_a_problem_of_severity_warning_and_the_text_stays_valid(operator, greeter):
    body = Page(operator).post(url("editor_text", draft_open(operator, greeter)), {"text": TYPO, "revision": 1}).json()
    assert body["valid"] is True
    assert [(p["code"], p["line"], p["severity"]) for p in body["problems"]] == [("unknown_name", 12, "warning")]
    assert body["problems"][0]["message"].startswith(SAID)


def test_validation_uses_the_step_library(operator, greeter):
    StepLibraryEntry.objects.create(name="greet", definition={"agent": "mock", "command": "hi"})
    text = SOURCE.replace("    agent: mock\n    command: say hello\n", "    library_step: greet\n")
    body = Page(operator).post(url("editor_text", draft_open(operator, greeter)), {"text": text, "revision": 1}).json()
    assert (body["valid"], body["problems"]) == (True, [])


@pytest.mark.parametrize("text,code", [
    ("name: deep\nsteps: " + "[" * 200 + "]" * 200 + "\n", "too_deep"),
    ("name: bomb\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
     + "steps: []\n", "alias_limit"),
    ("name: x\nsteps:\n  - id: a\n   bad: indent\n", "yaml_error"),
    ("- just\n- a list\n", "not_a_mapping"),
])
def test_hostile_text_answers_a_clear_problem(operator, greeter, text, code):
    response = Page(operator).post(url("editor_text", draft_open(operator, greeter)), {"text": text, "revision": 1})
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is False and [p["code"] for p in body["problems"]] == [code]
    assert body["outline"]["parsed"] is False


def test_a_patch_answers_the_new_text_and_the_changes_that_make_it(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    op = {"op": "field.set", "id": "hello", "path": ["command"], "value": "say hello world"}
    response = page.post(url("editor_patch", draft), {"text": SOURCE, "revision": 3, "op": op})
    assert response.status_code == 200, response.json()
    body = response.json()
    wanted = SOURCE.replace("say hello", "say hello world")
    assert body["text"] == wanted and applied(SOURCE, body["changes"]) == wanted
    assert (body["revision"], body["valid"], body["dirty"], body["renamed"]) == (3, True, True, {})
    assert next(s for s in body["outline"]["steps"] if s["id"] == "hello")["fields"]["command"] == "say hello world"
    draft.refresh_from_db()
    assert (draft.text, draft.revision) == (wanted, 3)


def test_deleting_a_selection_is_one_patch_whose_changes_make_the_new_text(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    op = {"op": "selection.remove", "ids": ["done", "hello"]}
    body = page.post(url("editor_patch", draft), {"text": SOURCE, "revision": 1, "op": op}).json()
    wanted = "name: greeter\ndescription: Says hello\nsteps:\n  - id: shout\n    agent: mock\n" \
        "    stdin: $hello.stdout\n    command: tr a-z A-Z\n"
    assert body["text"] == wanted and applied(SOURCE, body["changes"]) == wanted
    assert [s["id"] for s in body["outline"]["steps"]] == ["shout"]
    assert not body["valid"] and [p["code"] for p in body["problems"]] == ["unknown_reference"]  # shout read hello


def test_a_patch_applies_to_the_pages_text_which_may_be_ahead_of_the_draft(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    typed = SOURCE.replace("echo done", "echo finished")  # typed, not yet sent as a text write
    body = page.post(url("editor_patch", draft), {"text": typed, "revision": 1,
                                                  "op": {"op": "edge.add", "from": "hello", "to": "done"}}).json()
    assert "echo finished" in body["text"] and "depends_on: [shout, hello]" in body["text"]


def test_a_rename_rewrites_references_and_keeps_the_steps_place(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    StepPlacement.objects.create(workflow=greeter, step_id="hello", x=40, y=50, placed_by=operator)
    op = {"op": "step.rename", "id": "hello", "to": "greet"}
    body = page.post(url("editor_patch", draft), {"text": SOURCE, "revision": 1, "op": op}).json()
    assert body["text"] == SOURCE.replace("id: hello", "id: greet").replace("$hello.stdout", "$greet.stdout")
    assert {p.step_id: (p.x, p.y) for p in StepPlacement.objects.filter(workflow=greeter)} == {
        "hello": (40, 50), "greet": (40, 50)}  # the saved version still names hello
    event = AuditEvent.objects.get(code="forge.layout.placed")
    assert (event.target, event.detail["renamed"]) == ("workflow:greeter", {"hello": "greet"})
    assert page.get(url("editor_draft", draft)).json()["placements"]["greet"] == {"x": 40, "y": 50}


def test_a_rename_in_a_workflow_not_saved_yet_keeps_its_place_in_the_draft(operator):
    page, draft = Page(operator), draft_new(operator, SOURCE.replace("greeter", "fresh"))
    assert page.post(url("editor_placements", draft), {"positions": {"shout": {"x": 5, "y": 6}}}).status_code == 200
    op = {"op": "step.rename", "id": "shout", "to": "yell"}
    assert page.post(url("editor_patch", draft), {"text": draft.text, "revision": 1, "op": op}).status_code == 200
    draft.refresh_from_db()
    assert draft.placements == {"shout": {"x": 5.0, "y": 6.0}, "yell": {"x": 5.0, "y": 6.0}}


@pytest.mark.parametrize("text,op,code", [
    ("name: x\nsteps: [\n", {"op": "step.remove", "id": "a"}, "not_parsed"),
    ("name: bomb\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
     {"op": "step.remove", "id": "a"}, "not_parsed"),
    (SOURCE, {"op": "step.explode", "id": "hello"}, "bad_patch"),
    (SOURCE, {"op": "step.remove", "id": "hello", "extra": 1}, "bad_patch"),
    (SOURCE, {"op": "step.rename", "id": "hello", "to": "Not An Id"}, "bad_id"),
    (SOURCE, {"op": "step.remove", "id": "nope"}, "unknown_step"),
    (SOURCE, {"op": "edge.remove", "from": "hello", "to": "shout"}, "implicit_edge"),
    (SOURCE, {"op": "edge.add", "from": "done", "to": "hello"}, "cycle"),
    (SOURCE, {"op": "field.set", "id": "hello", "path": ["id"], "value": "x"}, "use_rename"),
    (SOURCE, {"op": 5}, "bad_patch"),
    (SOURCE, {}, "bad_patch"),
    (SOURCE, {"op": "field.set", "id": "hello", "path": ["x-deep"], "value": json.loads("[" * 900 + "]" * 900)},
     "bad_value"),
    (SOURCE, {"op": "field.set", "id": "hello", "path": ["command"], "value": "a" * 1_500_000}, "bad_value"),
])
def test_a_patch_that_cannot_apply_is_refused_with_its_code_and_changes_nothing(operator, greeter, text, op, code):
    """A malformed op is 400; a well-formed one this text cannot take (its steps, its edges) is 422 (Invalid)."""
    page, draft = Page(operator), draft_open(operator, greeter)
    before = world_state()
    response = page.post(url("editor_patch", draft), {"text": text, "revision": 1, "op": op})
    status = 422 if code in ("not_parsed", "unknown_step", "implicit_edge", "cycle", "use_rename") else 400
    assert (response.status_code, error_of(response)) == (status, code)
    assert world_state() == before


def test_copy_gives_the_steps_as_yaml_that_pastes_back_with_fresh_ids(operator, greeter):
    page, draft = Page(operator), draft_open(operator, greeter)
    copied = page.post(url("editor_copy"), {"text": SOURCE, "ids": ["hello", "shout"]}).json()["yaml"]
    assert "id: hello" in copied and "id: shout" in copied and "# the first step" in copied
    body = page.post(url("editor_patch", draft), {"text": SOURCE, "revision": 1,
                                                  "op": {"op": "selection.paste", "yaml": copied, "after": None}})
    assert body.status_code == 200
    assert body.json()["renamed"] == {"hello": "hello_2", "shout": "shout_2"}
    assert [s["id"] for s in body.json()["outline"]["steps"]] == ["hello", "shout", "done", "hello_2", "shout_2"]


def test_a_copy_of_a_step_that_is_not_there_is_422(operator):
    response = Page(operator).post(url("editor_copy"), {"text": SOURCE, "ids": ["nope"]})
    assert (response.status_code, error_of(response)) == (422, "unknown_step")


def test_the_schema_carries_the_completions(operator):
    StepLibraryEntry.objects.create(name="greet", definition={"agent": "mock", "command": "hi"})
    body = Page(operator).get(url("editor_schema")).json()
    assert "steps" in body["properties"]
    completions = body["x-forge"]["completions"]
    assert "greet" in completions["library"] and {"contains", "vars", "args"} <= set(completions["expressions"])


def test_the_diff_of_two_versions_is_text_and_a_step_summary(operator, greeter, save_workflow):
    save_workflow(SOURCE.replace("say hello", "say hi"), operator)
    body = Page(operator).get(url("editor_diff", workflow="greeter", a=1, b=2)).json()
    assert "-    command: say hello\n+    command: say hi\n" in body["diff"]
    assert body["summary"]["changed"] == {"hello": [{"field": "command", "change": "changed", "old": "say hello",
                                                           "new": "say hi"}]}


def test_the_diff_is_for_every_viewer(approver, greeter):
    assert Page(approver).get(url("editor_diff", workflow="greeter", a=1, b=1)).status_code == 200
