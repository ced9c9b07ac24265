"""Pydantic models of a .lobsterX document and its steps (spec sections 1-2).

Strict: a value of the wrong type is an error, never converted; unknown keys
are errors except `x-` keys, which are kept for tools on the document and
dropped elsewhere.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.artifacts import MAX_PATTERNS, pattern_problem

OUTPUT_TYPES = ("string", "number", "integer", "boolean", "object", "array")
OutputType = Literal["string", "number", "integer", "boolean", "object", "array"]
OnFailure = Literal["halt", "skip", "retry_once", "retry_once_then_escalate", "fail", "continue", "retry"]
TriggerRule = Literal["all_done_default", "all_success", "one_success", "none_failed_min_one_success", "all_done"]
RETRYING_POLICIES = frozenset({"retry_once", "retry_once_then_escalate", "retry"})

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])\s*$")  # "d": the document timeout's alone
_UNITS = {"s": 1, "m": 60, "h": 3600}
MAX_TIMEOUT_S = 7 * 24 * 3600


def parse_duration(value: Any) -> float:
    """Seconds from a number or a string such as "90s", "5m", "1h"."""
    if isinstance(value, bool):
        raise ValueError("must be a number of seconds or a string such as \"90s\", \"5m\", \"1h\"")
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:
            seconds = float("inf")
    elif isinstance(value, str) and (match := _DURATION.match(value)) and match.group(2) in _UNITS:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    else:
        raise ValueError("must be a number of seconds or a string such as \"90s\", \"5m\", \"1h\"")
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise ValueError(f"must be more than 0 and at most {MAX_TIMEOUT_S} seconds (7 days)")
    return seconds


MAX_RUN_TIMEOUT_S = 7 * 24 * 3600  # the document timeout's own bound (spec 15); an installation may lower it


def parse_run_timeout(value: Any) -> float:
    """Seconds from a document's `timeout`: a step timeout's forms plus "<n>d", at most MAX_RUN_TIMEOUT_S."""
    if isinstance(value, str) and (match := _DURATION.match(value)) and match.group(2) == "d":
        seconds = float(match.group(1)) * 86400
        if not 0 < seconds <= MAX_RUN_TIMEOUT_S:
            raise ValueError(f"must be more than 0 and at most {MAX_RUN_TIMEOUT_S} seconds (7 days)")
        return seconds
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError("must be a number of seconds or a string such as \"90s\", \"5m\", \"1h\", \"2d\", "
                         "more than 0 and at most 7 days") from None


def _is_extension(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("x-")


@functools.cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(field.alias or name for name, field in model.model_fields.items())


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_extensions(cls, data: Any) -> Any:
        if isinstance(data, dict):
            extra = data.keys() - _field_names(cls)  # usually empty: checked in C, not key by key
            if extra and any(_is_extension(k) for k in extra):
                return {k: v for k, v in data.items() if not _is_extension(k)}
        return data


class ItemSchema(Strict):
    type: OutputType


class OutputSchema(Strict):
    type: OutputType | None = None
    required: bool = True
    enum: list[Any] | None = None
    minimum: float | None = None
    maximum: float | None = None
    minLength: int | None = Field(default=None, ge=0)
    maxLength: int | None = Field(default=None, ge=0)
    pattern: str | None = None
    items: ItemSchema | None = None

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            import regex
            try:
                regex.compile(value)
            except regex.error as exc:
                raise ValueError(f"is not a valid regular expression: {getattr(exc, 'msg', exc)}") from None
        return value


class InputSpec(Strict):
    from_: str = Field(alias="from")
    type: OutputType | None = None
    required: bool = True


class ArgSpec(Strict):
    type: OutputType = "string"
    required: bool = False
    default: Any = None


class RetrySpec(Strict):
    max_retries: int = Field(ge=0, le=100)
    backoff_s: float = Field(default=1.0, ge=0, le=86400)
    strategy: Literal["exponential", "fixed"] = "exponential"
    max_backoff_s: float = Field(default=60.0, ge=0, le=86400)


class FixSpec(Strict):
    """A reviewer/fix cycle's second command (seed 002's `on_request_changes`)."""

    fix_command: str
    fix_agent: str | None = None
    re_review_command: str | None = None


class LoopSpec(Strict):
    """Two flavours (spec section 9): iterate (`max_iterations`, `until`, `gate`) or review (`max_cycles`,
    `on_request_changes`). Which fields go together is checked by validation, with its own codes."""

    max_iterations: int | None = Field(default=None, ge=1, le=1000)
    until: str | None = None
    fresh_context: bool = False
    gate: Literal["reply"] | None = None
    max_cycles: int | None = Field(default=None, ge=1, le=20)
    on_request_changes: FixSpec | None = None

    @property
    def review(self) -> bool:
        """A reviewer/fix cycle rather than an iterate loop."""
        return self.on_request_changes is not None


class MockCall(Strict):
    """One answer of `mock.sequence`: the k-th call of the mock gets item k (the last repeats)."""

    stdout: str | None = None
    outputs: dict[str, Any] | None = None
    error: str | None = None


class MockSpec(Strict):
    outputs: dict[str, Any] | None = None
    stdout: str | None = None
    fail_times: int = Field(default=0, ge=0)
    error: str | None = None
    delay_s: float = Field(default=0.0, ge=0, le=MAX_TIMEOUT_S)
    tokens: int | None = Field(default=None, ge=0)
    cost: float | None = Field(default=None, ge=0)
    timeout: bool = False
    sequence: list[MockCall] | None = Field(default=None, min_length=1, max_length=1000)


class AgentConfig(Strict):
    """A step's overlay of its agent's settings (spec 15); which keys are allowed is the agent's to say, checked
    when the run starts."""

    model: str | None = Field(default=None, min_length=1, max_length=128)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000)


def _artifact_glob(pattern: str) -> str:
    if (problem := pattern_problem(pattern)) is not None:
        raise ValueError(problem)
    return pattern


# A glob relative to the run's directory (engine.artifacts says what it matches).
ArtifactGlob = Annotated[str, AfterValidator(_artifact_glob)]


class WorkflowRef(Strict):
    name: str
    version: int | None = Field(default=None, ge=1)
    args: dict[str, Any] | None = None


class Step(Strict):
    id: str
    name: str | None = None
    label: str | None = None
    phase: str | None = None
    agent: str | None = None
    command: str | None = None
    stdin: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    trigger_rule: TriggerRule = "all_done_default"
    condition: str | None = None
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    outputs: dict[str, OutputSchema] = Field(default_factory=dict)
    success_criteria: list[str] = Field(default_factory=list)
    on_failure: OnFailure = "halt"
    retry: RetrySpec | None = None
    parallel_failure_policy: Literal["wait_all", "fail_fast"] = "wait_all"
    timeout: Any = None  # seconds, or "90s" / "5m" / "1h"
    approval: Literal["required"] | None = None
    approvers: list[str] | None = None
    approval_message: str | None = None
    on_reject: Literal["halt", "continue"] = "halt"
    workflow_ref: str | WorkflowRef | None = None
    library_step: str | None = None
    loop: LoopSpec | None = None
    capabilities: list[str] = Field(default_factory=list)
    agent_config: AgentConfig | None = None
    artifacts: list[ArtifactGlob] = Field(default_factory=list, max_length=MAX_PATTERNS)
    # What one call is expected to cost, reserved against budgets at dispatch (not in the spec's table:
    # docs/engine.md). It can raise the agent's own projection, never lower it.
    estimated_cost: float | None = Field(default=None, ge=0)
    mock: MockSpec | None = None

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("estimated_cost")
    @classmethod
    def _finite_cost(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @property
    def timeout_s(self) -> float | None:
        return None if self.timeout is None else parse_duration(self.timeout)

    @property
    def kind(self) -> str:
        """`approval`, `subworkflow` or `agent`."""
        if self.approval is not None:
            return "approval"
        if self.workflow_ref is not None:
            return "subworkflow"
        return "agent"

    @property
    def ref(self) -> WorkflowRef | None:
        if isinstance(self.workflow_ref, str):
            return WorkflowRef(name=self.workflow_ref)
        return self.workflow_ref


STEP_FIELDS = frozenset(name for name in Step.model_fields)


class Document(Strict):
    """The document without its steps (they are validated one by one)."""

    name: str
    description: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, ArgSpec] = Field(default_factory=dict)
    phases: list[str] = Field(default_factory=list)
    timeout: Any = None  # the run deadline: seconds, or "90s" / "5m" / "1h" / "2d"
    sequential: bool = False
    steps: Any = None

    @field_validator("timeout")
    @classmethod
    def _run_timeout(cls, value: Any) -> Any:
        if value is not None:
            parse_run_timeout(value)
        return value

    @property
    def timeout_s(self) -> float | None:
        return None if self.timeout is None else parse_run_timeout(self.timeout)

    @field_validator("name")
    @classmethod
    def _snake_case(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,127}", value):
            raise ValueError("must be snake_case: a lowercase letter, then lowercase letters, digits "
                             "or underscores (at most 128 characters)")
        return value
