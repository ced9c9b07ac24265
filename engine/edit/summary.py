"""What changed between two versions of a workflow, step by step and field by field (the versions page).

Both texts are read with the engine's bounded loader, so a hostile version costs no more here than in
validation. Steps are matched by id (the first step holding an id owns it, as in validation; a step without a
string id is not tracked). A step removed and a step added with the same fields but the id are a rename.
"""

from __future__ import annotations

import difflib

from engine.edit.values import json_safe, same
from engine.yamlload import YamlLoadError, load


def version_summary(old_text: str, new_text: str) -> dict:
    """The summary of old -> new.

    Returns:
        {"parsed": bool, "error": None | {"which": "old"|"new", "code", "message", "line", "column"},
         "added": [ids], "removed": [ids], "renamed": [{"from", "to"}], "moved": [ids],
         "changed": {id: [{"field": "retry.max_retries", "change": "added"|"removed"|"changed",
                           "old": value|None, "new": value|None}]},
         "document": [the same entries for the document's own fields]}
        Lists are in file order (removed: the old file's, the others the new file's); `moved` names the steps
        kept on both sides whose order relative to the others changed.
    """
    summary = {"parsed": True, "error": None, "added": [], "removed": [], "renamed": [], "moved": [],
               "changed": {}, "document": []}
    roots = []
    for which, text in (("old", old_text), ("new", new_text)):
        try:
            roots.append(load(text).value)
        except YamlLoadError as exc:
            summary.update(parsed=False, error={"which": which, **exc.problem.to_json()})
            del summary["error"]["step"]
            return summary
    old_root, new_root = roots
    old_steps, new_steps = _steps(old_root), _steps(new_root)
    added = [i for i in new_steps if i not in old_steps]
    removed = [i for i in old_steps if i not in new_steps]
    for gone in list(removed):
        twin = next((i for i in added if same(_without_id(old_steps[gone]), _without_id(new_steps[i]))), None)
        if twin is not None:
            summary["renamed"].append({"from": gone, "to": twin})
            removed.remove(gone)
            added.remove(twin)
    summary["added"], summary["removed"] = added, removed
    for step_id, fields in new_steps.items():
        if step_id in old_steps:
            if changes := _diff(old_steps[step_id], fields, ""):
                summary["changed"][step_id] = changes
    summary["moved"] = _moved([i for i in old_steps if i in new_steps], [i for i in new_steps if i in old_steps])
    summary["document"] = _diff({k: v for k, v in old_root.items() if k != "steps"},
                                {k: v for k, v in new_root.items() if k != "steps"}, "")
    return summary


def _steps(root: dict) -> dict[str, dict]:
    steps: dict[str, dict] = {}
    if isinstance(root.get("steps"), list):
        for raw in root["steps"]:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                steps.setdefault(raw["id"], raw)
    return steps


def _without_id(step: dict) -> dict:
    return {k: v for k, v in step.items() if k != "id"}


def _diff(old: dict, new: dict, prefix: str) -> list[dict]:
    """Field by field: into mappings on both sides, whole values otherwise (a list is one value)."""
    changes = []
    for key in [*old, *(k for k in new if k not in old)]:
        path = f"{prefix}{key}"
        if key not in new:
            changes.append({"field": path, "change": "removed", "old": json_safe(old[key]), "new": None})
        elif key not in old:
            changes.append({"field": path, "change": "added", "old": None, "new": json_safe(new[key])})
        elif isinstance(old[key], dict) and isinstance(new[key], dict):
            changes += _diff(old[key], new[key], path + ".")
        elif not same(old[key], new[key]):
            changes.append({"field": path, "change": "changed", "old": json_safe(old[key]), "new": json_safe(new[key])})
    return changes


def _moved(old_order: list[str], new_order: list[str]) -> list[str]:
    """The kept steps outside the longest run of steps whose order both sides share."""
    matcher = difflib.SequenceMatcher(None, old_order, new_order, autojunk=False)
    staying = {new_order[j + k] for _, j, size in matcher.get_matching_blocks() for k in range(size)}
    return [i for i in new_order if i not in staying]
