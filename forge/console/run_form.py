"""The Run form of a workflow version, generated from its document's `args`: one field per argument with its
type, default and whether it is required. The values go to run_start as text, so the engine's own argument
rules (the same as `forge run --arg`) judge them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from forge.runs.compiled import new_run_workflow
from forge.workflows.models import WorkflowVersion

@dataclass(frozen=True)
class ArgField:
    name: str
    type: str
    required: bool
    default: str  # as the form shows it
    value: str  # what was typed, on a form shown again

    @property
    def widget(self) -> str:
        return {"boolean": "checkbox", "object": "textarea", "array": "textarea"}.get(self.type, "text")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def arg_fields(version: WorkflowVersion, posted=None) -> list[ArgField]:
    document = new_run_workflow(version)[0].document
    fields = []
    for name, spec in document.args.items():
        shown = _text(spec.default)
        typed = posted.get(f"arg-{name}", shown) if posted is not None else shown
        fields.append(ArgField(name, spec.type, spec.required, shown, typed))
    return fields


def posted_args(version: WorkflowVersion, posted) -> dict[str, str]:
    """The arguments a person typed, as text (an unticked boolean is false; an empty field is not given)."""
    given: dict[str, str] = {}
    for field in arg_fields(version):
        key = f"arg-{field.name}"
        if field.type == "boolean":
            given[field.name] = "true" if posted.get(key) in ("on", "true") else "false"
        elif (value := posted.get(key, "")).strip():  # whole: run_start refuses what is too large
            given[field.name] = value
    return given
