"""The JSON Schema (draft 2020-12) of a .lobsterX document, for the editor's completion and lint.

One source: the schema is generated from the pydantic models of engine.model, so a field added there appears
here. What the models cannot say is added on top: `steps` is a non-empty list of steps (the Document model leaves
it to validation, step by step), `x-` keys are allowed wherever the models drop them, timeouts are a number or a
duration string, and each field carries its description from the spec (sections 1-2) for the completion popup.
The schema is looser than validation (references, cycles, completeness and expressions are the validator's): it
never refuses a document the validator accepts (tests/engine/test_schema.py proves it).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic.json_schema import models_json_schema

from engine.model import MAX_RUN_TIMEOUT_S, MAX_TIMEOUT_S, Document, Step, _DURATION
from engine.validation import STEP_ID

EXTENSION_KEYS = "^x-"

DOCUMENT_DOCS = {
    "name": "Required. The workflow's name: snake_case, unique per workspace.",
    "description": "What the workflow does, for people.",
    "variables": "Run-scoped defaults (`${vars.name}`); run arguments override them.",
    "args": "Declared run arguments: `{name: {type, required, default}}` (`${args.name}`).",
    "phases": "Named phases that steps may refer to with `phase`.",
    "timeout": "The run's deadline: seconds, or \"90s\", \"5m\", \"1h\", \"2d\" (at most 7 days).",
    "sequential": "true: a step without `depends_on` follows the step before it in the file.",
    "steps": "Required, at least one: the steps of the workflow.",
}

STEP_DOCS = {
    "id": "Required, unique: ^[a-z][a-z0-9_]{0,63}$.",
    "name": "Display text.",
    "label": "Display text.",
    "phase": "One of the document's `phases`.",
    "agent": "The agent (role) that executes the step; an agent step needs one.",
    "command": "The instruction: a prompt for an LLM agent, a command line for a shell agent.",
    "stdin": "`$step_id.stdout`, `$step_id.outputs.field` or `$step_id.approved`; implies a dependency.",
    "depends_on": "Step ids this step waits for.",
    "trigger_rule": "When a step whose dependencies are all final runs (default all_done_default).",
    "condition": "An expression; false -> the step is skipped.",
    "inputs": "`{field: {from: \"step.outputs.x\", type, required}}`: values taken from other steps.",
    "outputs": "`{field: {type, required, enum, minimum, maximum, minLength, maxLength, pattern, items}}`.",
    "success_criteria": "Expressions over `outputs.*` and `output` (this step's stdout); all must hold.",
    "on_failure": "halt (default), skip, retry_once, retry_once_then_escalate; fail, continue, retry.",
    "retry": "`{max_retries, backoff_s, strategy: exponential|fixed, max_backoff_s}`; then `on_failure`.",
    "parallel_failure_policy": "wait_all (default) or fail_fast.",
    "timeout": "Seconds (a number) or \"90s\", \"5m\", \"1h\"; default from settings.",
    "approval": "`required` makes an approval step (no agent, no command).",
    "approvers": "Approval steps: the groups allowed to decide (default: the Approvers group).",
    "approval_message": "Approval steps: a template shown to the approver.",
    "on_reject": "Approval steps: halt (default) or continue (completes with approved: false).",
    "workflow_ref": "Run another workflow as a sub-workflow: `{name, version?, args?}` or a bare name.",
    "library_step": "A reusable step of the step library; its fields are defaults, this step's fields win.",
    "loop": "`{max_iterations, until, fresh_context, gate}` or `{max_cycles, on_request_changes}`.",
    "capabilities": "Capabilities the executing agent or gateway must have.",
    "agent_config": "A per-step overlay of the agent's settings, within what the agent allows.",
    "artifacts": "Glob patterns of files the step leaves in the run's directory, kept with the attempt.",
    "estimated_cost": "What one call is expected to cost, reserved against budgets at dispatch.",
    "mock": "The mock agent only: `{outputs, stdout, fail_times, error, delay_s, tokens, cost, timeout, "
            "sequence}`.",
}


def _duration(maximum: float, description: str) -> dict:
    return {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": maximum},
                      {"type": "string", "pattern": _DURATION.pattern}],
            "description": description}


def _walk(node: Any) -> None:
    """Drop pydantic's titles; let `x-` keys into every closed object (the models drop them)."""
    if isinstance(node, dict):
        node.pop("title", None)
        if node.get("type") == "object" and node.get("additionalProperties") is False:
            node.setdefault("patternProperties", {EXTENSION_KEYS: {}})
        for key, value in node.items():
            if key in ("properties", "$defs", "patternProperties"):  # maps of names to schemas
                for child in value.values():
                    _walk(child)
            elif key != "enum" and key != "default" and key != "const":
                _walk(value)
    elif isinstance(node, list):
        for child in node:
            _walk(child)


@functools.cache
def _schema() -> dict:
    _, top = models_json_schema([(Document, "validation"), (Step, "validation")],
                                ref_template="#/$defs/{model}")
    defs = top["$defs"]
    document = defs.pop("Document")
    step = defs["Step"]
    document["properties"]["steps"] = {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Step"}}
    document["required"] = ["name", "steps"]
    document["properties"]["timeout"] = _duration(MAX_RUN_TIMEOUT_S, "")
    step["properties"]["timeout"] = _duration(MAX_TIMEOUT_S, "")
    step["properties"]["id"].update(pattern=f"^{STEP_ID.pattern}$")
    for properties, docs in ((document["properties"], DOCUMENT_DOCS), (step["properties"], STEP_DOCS)):
        for name, text in docs.items():
            properties[name]["description"] = text
    _walk(document)
    _walk(defs)
    document["description"] = "A .lobsterX workflow (spec section 1)."
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Forge .lobsterX workflow",
            **document, "$defs": defs}


def lobsterx_schema() -> dict:
    """The schema as a fresh dict (callers may add to it, e.g. the editor's completions)."""
    return copy.deepcopy(_schema())
