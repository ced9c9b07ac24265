"""The step summary of two versions: steps added, removed, renamed, moved, changed field by field."""

from __future__ import annotations

import json

from engine.edit.summary import version_summary
from tests.engine.edit.documents import THREE_STEPS

OLD = THREE_STEPS


def summary(new: str, old: str = OLD) -> dict:
    got = version_summary(old, new)
    json.dumps(got, allow_nan=False)  # the versions page sends it as it is, and the browser's JSON.parse reads it
    return got


def test_no_change_says_nothing_changed():
    assert summary(OLD) == {"parsed": True, "error": None, "added": [], "removed": [], "renamed": [],
                            "moved": [], "changed": {}, "document": []}
    assert summary("# a comment\n" + OLD.replace("[fetch]", "\n      - fetch"))["changed"] == {}


def test_fields_changed_added_and_removed_are_listed_by_dotted_path():
    new = (OLD.replace("max_retries: 2", "max_retries: 5").replace("echo two", "echo 2")
           .replace("    depends_on: [build]\n", "    depends_on: [build]\n    timeout: 90s\n")
           .replace("    depends_on: [fetch]\n", ""))
    assert summary(new)["changed"] == {
        "fetch": [{"field": "retry.max_retries", "change": "changed", "old": 2, "new": 5}],
        "build": [{"field": "command", "change": "changed", "old": "echo two", "new": "echo 2"},
                  {"field": "depends_on", "change": "removed", "old": ["fetch"], "new": None}],
        "ship": [{"field": "timeout", "change": "added", "old": None, "new": "90s"}],
    }


def test_a_value_that_only_changes_type_is_a_change():
    new = OLD.replace("backoff_s: 1}", "backoff_s: 1.0}")
    assert summary(new)["changed"]["fetch"] == [
        {"field": "retry.backoff_s", "change": "changed", "old": 1, "new": 1.0}]
    truthy = OLD.replace("name: wf\n", "name: wf\nsequential: 1\n")
    assert summary(truthy.replace("sequential: 1", "sequential: true"), truthy)["document"] == [
        {"field": "sequential", "change": "changed", "old": 1, "new": True}]


def test_steps_added_and_removed_in_file_order():
    new = OLD.replace("  - id: build\n    agent: shell\n    command: echo two\n    depends_on: [fetch]\n", "")
    new += "  - id: late\n    agent: shell\n    command: echo late\n  - id: later\n    approval: required\n"
    got = summary(new)
    assert (got["added"], got["removed"], got["renamed"]) == (["late", "later"], ["build"], [])


def test_a_rename_is_one_entry_and_the_references_it_rewrote_are_changes():
    new = OLD.replace("id: build", "id: compile").replace("[build]", "[compile]")
    got = summary(new)
    assert (got["added"], got["removed"]) == ([], [])
    assert got["renamed"] == [{"from": "build", "to": "compile"}]
    assert got["changed"] == {"ship": [{"field": "depends_on", "change": "changed", "old": ["build"],
                                        "new": ["compile"]}]}


def test_a_step_moved_in_the_file_is_named():
    parts = OLD.split("  - id: ")
    new = "  - id: ".join([parts[0], parts[2], parts[1], parts[3]])
    assert summary(new)["moved"] in (["build"], ["fetch"])
    assert summary(new)["changed"] == {}


def test_document_fields_are_compared_like_step_fields():
    new = OLD.replace("description: first\n", "variables: {region: eu}\n").replace("name: wf", "name: wf2")
    assert summary(new)["document"] == [
        {"field": "name", "change": "changed", "old": "wf", "new": "wf2"},
        {"field": "description", "change": "removed", "old": "first", "new": None},
        {"field": "variables", "change": "added", "old": None, "new": {"region": "eu"}},
    ]


def test_text_that_does_not_parse_gives_a_clear_result_and_no_summary():
    got = summary("name: [unclosed\n")
    assert got["parsed"] is False
    assert got["error"]["which"] == "new" and got["error"]["code"] == "yaml_error" and got["error"]["line"] == 2
    assert (got["added"], got["removed"], got["changed"], got["document"]) == ([], [], {}, [])
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    assert summary(OLD, bomb)["error"]["which"] == "old"
    assert summary(OLD, bomb)["error"]["code"] == "alias_limit"
    assert summary("- a list\n")["error"]["code"] == "not_a_mapping"


def test_steps_without_an_id_or_a_repeated_id_are_not_tracked():
    new = OLD + "  - agent: shell\n  - id: fetch\n    agent: other\n  - 7\n"
    got = summary(new)
    assert (got["added"], got["removed"], got["changed"]) == ([], [], {})


def test_values_that_strict_json_cannot_hold_are_given_as_their_yaml_text():
    new = OLD.replace("description: first\n", "description: first\nvariables: {a: .nan, b: -.inf}\n")
    assert summary(new)["document"] == [
        {"field": "variables", "change": "added", "old": None, "new": {"a": ".nan", "b": "-.inf"}}]
    assert summary(new.replace("a: .nan", "a: .inf"), new)["document"] == [
        {"field": "variables.a", "change": "changed", "old": ".nan", "new": ".inf"}]
