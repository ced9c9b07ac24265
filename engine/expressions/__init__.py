"""One small expression language for conditions, success criteria, loop `until` and policy rules."""

from engine.expressions.errors import EvaluationError, ExpressionError
from engine.expressions.nodes import Node, Path, paths
from engine.expressions.parser import parse, parse_path
from engine.expressions.scope import MISSING, RESERVED_ROOTS, Scope, walk

__all__ = [
    "EvaluationError", "ExpressionError", "MISSING", "Node", "Path", "RESERVED_ROOTS",
    "Scope", "parse", "parse_path", "paths", "walk",
]
