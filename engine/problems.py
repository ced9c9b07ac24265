"""Validation problems: what `validate` reports, each with a code and a position."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem (or warning) found in a workflow document.

    Attributes:
        code: a stable code from the format's list (`cycle`, `bad_type`, ...).
        message: a sentence a workflow author can act on.
        step: the id of the step it belongs to, as written; None for the document.
        line: 1-based line of the YAML node it is about, or None.
        column: 1-based column of that node, or None.
    """

    code: str
    message: str
    step: str | None = None
    line: int | None = None
    column: int | None = None

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "step": self.step,
                "line": self.line, "column": self.column}

    def sort_key(self) -> tuple:
        return (self.line is None, self.line or 0, self.column or 0, self.code, self.message)


class WorkflowInvalid(Exception):
    """Raised by loaders that need a valid workflow; carries every problem found."""

    def __init__(self, problems: list[Problem], warnings: list[Problem] | None = None):
        self.problems = problems
        self.warnings = warnings or []
        first = problems[0].message if problems else "invalid workflow"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)
