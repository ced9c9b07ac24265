"""What one step computes from the run's scope: a dispatch's values, and the acceptance of its outputs.

Pure functions: the machine calls them and turns a StepFailure into the
step's failure policy.
"""

from __future__ import annotations

from typing import Any

from engine.expressions import MISSING, EvaluationError, Scope
from engine.outputs import coerce, coerce_outputs, validate_outputs
from engine.templates import Template, TemplateError, to_text
from engine.workflow import StepSpec


class StepFailure(Exception):
    """The step cannot go on; `code` is its error code (template_error, output_invalid, ...)."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(message)


def dispatch_values(spec: StepSpec, scope: Scope, shell_agents: tuple[str, ...], template: Template | None = None,
                    agent: str | None = None) -> tuple[dict, str, str | None, dict]:
    """The inputs, the rendered command, the stdin text and the command's variables of an agent step's dispatch.

    A shell agent's command refers to its values through variables (spec section 6); other agents get
    the values written into the command, as text. `template` and `agent` are a loop call's own (a review
    cycle's fix runs another command, maybe with another agent); by default the step's.

    Raises:
        StepFailure: `input_missing` or `template_error`.
    """
    inputs = {}
    for binding in spec.inputs:
        value = scope.resolve(binding.path.dollar, binding.path.segments)
        if value is MISSING:  # a path that resolves to null is a value (spec 13), not a missing input
            if binding.required:
                raise StepFailure("input_missing", f"input {binding.name!r} ({binding.path.text()}) did not resolve")
            continue
        inputs[binding.name] = coerce(value, binding.type)
    template = spec.command if template is None else template
    agent = spec.model.agent if agent is None else agent
    try:
        command, env = "", {}
        if template is not None and agent in shell_agents:
            command, env = template.render_shell(scope)
        elif template is not None:
            command = template.render(scope)
        stdin = None
        if spec.stdin is not None:
            value = scope.resolve(spec.stdin.dollar, spec.stdin.segments)
            if value is MISSING:
                raise TemplateError(f"stdin {spec.stdin.text()} does not resolve")
            stdin = to_text(value)
    except TemplateError as exc:
        raise StepFailure("template_error", str(exc)) from None
    return inputs, command, stdin, env


def agent_config(spec: StepSpec, agent: str) -> dict[str, Any]:
    """The step's `agent_config` for a call of `agent`: the keys it sets, for its own agent's calls only (a review
    cycle's fix agent keeps its settings); {} when it sets none."""
    overlay = spec.model.agent_config
    if overlay is None or agent != spec.model.agent:
        return {}
    return overlay.model_dump(exclude_none=True)


def approval_message(spec: StepSpec, scope: Scope) -> str:
    try:
        return spec.approval_message.render(scope) if spec.approval_message is not None else ""
    except TemplateError as exc:
        raise StepFailure("template_error", str(exc)) from None


def child_args(spec: StepSpec, scope: Scope) -> dict[str, Any]:
    """A sub-workflow's arguments; a value that is exactly one `${path}` keeps its type."""
    args = {}
    try:
        for name, value in spec.ref_args.items():
            if not isinstance(value, Template):
                args[name] = value
            elif len(value.parts) == 1 and not isinstance(value.parts[0], str):
                path = value.parts[0]
                resolved = scope.resolve(path.dollar, path.segments)
                if resolved is MISSING:
                    raise TemplateError(f"${{{path.text()}}} does not resolve")
                args[name] = resolved
            else:
                args[name] = value.render(scope)
    except TemplateError as exc:
        raise StepFailure("template_error", str(exc)) from None
    return args


def accept_outputs(spec: StepSpec, outputs: dict, scope: Scope, stdout: str = "") -> dict:
    """Spec section 7 in order: coercion, validation, success criteria, input passthrough. The criteria read
    `outputs` (the validated outputs) and `output` (`stdout`, what the step printed: spec 15).

    Raises:
        StepFailure: `output_invalid`, `success_criteria_failed` or `condition_error`.
    """
    schema = spec.model.outputs
    result = coerce_outputs(outputs, schema) if schema else dict(outputs)
    problem = validate_outputs(result, schema) if schema else None
    if problem:
        raise StepFailure("output_invalid", problem)
    if spec.criteria:
        local = scope.with_local({"output": stdout, "outputs": result})
        for text, node in spec.criteria:
            try:
                holds = node.evaluate(local)
            except EvaluationError as exc:
                raise StepFailure("condition_error", f"success criterion {text!r} could not be evaluated: "
                                  f"{exc}") from None
            if not holds:
                raise StepFailure("success_criteria_failed", f"success criterion {text!r} does not hold")
    for binding in spec.inputs:
        if binding.name not in schema:
            value = scope.resolve(binding.path.dollar, binding.path.segments)
            if value is not MISSING:
                result[binding.name] = coerce(value, binding.type)
    return result
