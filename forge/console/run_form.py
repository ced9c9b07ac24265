"""The Run form of a workflow version, generated from its document's `args`: one field per argument with its
type, default and whether it is required. The values go to run_start as text, so the engine's own argument
rules (the same as `forge run --arg`) judge them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from engine.secrets import redact_secrets
from forge.errors import NotFound
from forge.runs.compiled import new_run_workflow
from forge.runs.models import Run
from forge.runs.selectors import runs_for_user
from forge.workflows.models import Workflow, WorkflowVersion

RUN_ID = re.compile(r"[0-9]{1,18}")  # a run's number, below the database's integer limit


class RunFormRefused(NotFound):
    """A Run form asked for something that is not there (a version, a run to run again): nothing starts."""


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


def version_to_start(workflow: Workflow, posted) -> WorkflowVersion | None:
    """The version the form starts: the one it names (a Run again of an older run), else the latest."""
    given = posted.get("version")
    if given is None:
        return workflow.latest_version()
    version = workflow.versions.filter(number=int(given)).first() if RUN_ID.fullmatch(given) else None
    if version is None:
        raise RunFormRefused(f"{workflow.name} has no version {given[:32]!r}: nothing was started.")
    return version


def run_again(user, workflow: Workflow, given: str) -> Run:
    """The run whose arguments fill the form: one of this workflow's runs the person may see."""
    run = None
    if RUN_ID.fullmatch(given):
        run = runs_for_user(user).filter(pk=int(given), workflow=workflow).select_related("version").first()
    if run is None:
        raise RunFormRefused(f"{workflow.name} has no run {given[:32]!r} you may see, so the form is not filled "
                             f"from it.")
    return run


def run_again_values(run: Run) -> tuple[dict[str, str], list[str]]:
    """A run's arguments as the Run form's fields hold them, and the names of those left out: a value the audit
    trail would redact (a credential-named argument, a URL's password or query) is typed again, never shown."""
    shown = redact_secrets(run.args)
    withheld = sorted(name for name, value in run.args.items() if shown.get(name) != value)
    return {f"arg-{name}": _text(value) for name, value in run.args.items() if name not in withheld}, withheld
