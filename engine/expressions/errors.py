"""Errors of the expression language."""


class ExpressionError(ValueError):
    """An expression does not parse; `position` is the 0-based offset where it went wrong."""

    def __init__(self, message: str, position: int | None = None, source: str | None = None):
        self.reason = message
        self.position = position
        self.source = source
        where = f" at position {position + 1}" if position is not None else ""
        super().__init__(f"{message}{where}")


class EvaluationError(ValueError):
    """An expression parsed but could not be evaluated (a bad or too slow regex)."""
