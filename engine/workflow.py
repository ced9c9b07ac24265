"""A validated workflow, compiled for the interpreter: expressions parsed once, dependencies inferred."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.expressions import Node, Path
from engine.graph import Graph
from engine.model import Document, Step
from engine.problems import Problem
from engine.templates import Template

TERMINAL_ACTIONS = ("halt", "skip", "escalate")
MAX_CHILD_DEPTH = 16  # sub-workflows nest at most this deep


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """What happens after an attempt fails: retries with backoff, then a terminal action."""

    max_retries: int = 0
    backoff_s: float = 0.0
    strategy: str = "fixed"
    max_backoff_s: float = 0.0
    terminal: str = "halt"  # one of TERMINAL_ACTIONS

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        if self.strategy == "exponential":
            wait = self.backoff_s * (2 ** min(retry - 1, 62))
        else:
            wait = self.backoff_s
        return min(wait, self.max_backoff_s)


_ALIASES = {"fail": "halt", "continue": "skip"}


def failure_policy(step: Step) -> FailurePolicy:
    """The policy of a step's `on_failure` and `retry` fields (spec section 8)."""
    on_failure = _ALIASES.get(step.on_failure, step.on_failure)
    if step.retry is not None:
        spec = step.retry
        terminal = on_failure if on_failure in ("halt", "skip") else "halt"
        return FailurePolicy(spec.max_retries, spec.backoff_s, spec.strategy, spec.max_backoff_s, terminal)
    if on_failure == "retry_once":
        return FailurePolicy(max_retries=1)
    if on_failure == "retry_once_then_escalate":
        return FailurePolicy(max_retries=1, terminal="escalate")
    if on_failure == "retry":
        return FailurePolicy(3, 1.0, "exponential", 60.0, "halt")
    return FailurePolicy(terminal=on_failure)


@dataclass(frozen=True, slots=True)
class InputBinding:
    name: str
    path: Path
    type: str | None
    required: bool


@dataclass(slots=True)
class StepSpec:
    """One step, compiled. `model` is the validated pydantic Step."""

    id: str
    index: int
    model: Step
    deps: tuple[str, ...] = ()
    condition: Node | None = None
    criteria: tuple[tuple[str, Node], ...] = ()
    until: Node | None = None
    command: Template | None = None
    approval_message: Template | None = None
    fix_command: Template | None = None  # a review cycle's fix (loop.on_request_changes)
    re_review_command: Template | None = None
    stdin: Path | None = None
    inputs: tuple[InputBinding, ...] = ()
    ref_args: dict[str, Any] = field(default_factory=dict)  # name -> Template or plain value
    policy: FailurePolicy = FailurePolicy()

    @property
    def kind(self) -> str:
        return self.model.kind

    @property
    def trigger_rule(self) -> str:
        return self.model.trigger_rule

    @property
    def fail_fast(self) -> bool:
        return self.model.parallel_failure_policy == "fail_fast"


class Workflow:
    """A valid workflow: the document, its compiled steps in file order, and its graph."""

    def __init__(self, document: Document, steps: list[StepSpec], source: str = "",
                 unresolved_library: list[str] | None = None, warnings: list[Problem] | None = None):
        self.document = document
        self.unresolved_library = unresolved_library or []
        self.warnings = warnings or []  # validation's warnings (unknown_name, ...): shown wherever it is run
        self.steps = steps
        self.by_id = {step.id: step for step in steps}
        self.graph = Graph({step.id: step.deps for step in steps})
        self.source = source
        self._layers: list[list[str]] | None = None

    @property
    def name(self) -> str:
        return self.document.name

    def layers(self) -> list[list[str]]:
        if self._layers is None:
            self._layers = self.graph.layers()
        return self._layers
