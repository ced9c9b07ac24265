"""The expression tree and its evaluation. No `eval`, no attribute access on Python objects."""

from __future__ import annotations

from typing import Any

import regex

from engine.expressions.errors import EvaluationError
from engine.expressions.scope import MISSING, Scope

REGEX_TIMEOUT_S = 0.05


def is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and value is not True and value is not False


def prefix_match(value: Any, literal: str) -> bool:
    """Enum prefix tolerance: `"COMPLETE -- all checks passed"` matches `'COMPLETE'`."""
    if type(value) is not str:
        return False
    if value == literal:
        return True
    return (len(value) > len(literal) and value.startswith(literal)
            and not (value[len(literal)].isalnum() or value[len(literal)] == "_"))


def equals(left: Any, right: Any) -> bool:
    """Equality without conversions: `'5' == 5` and `true == 1` are false."""
    if left is MISSING:
        left = None
    if right is MISSING:
        right = None
    if is_number(left) and is_number(right):
        return left == right
    if type(left) is not type(right):
        return False
    if type(left) is list:
        return len(left) == len(right) and all(equals(a, b) for a, b in zip(left, right))
    if type(left) is dict:
        return left.keys() == right.keys() and all(equals(left[k], right[k]) for k in left)
    return left == right


class Node:
    __slots__ = ()

    def evaluate(self, scope: Scope) -> Any:
        raise NotImplementedError

    def children(self) -> tuple[Node, ...]:
        return ()


class Literal(Node):
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def evaluate(self, scope: Scope) -> Any:
        return self.value


class ListLiteral(Node):
    __slots__ = ("items",)

    def __init__(self, items: tuple[Node, ...]):
        self.items = items

    def evaluate(self, scope: Scope) -> Any:
        return [item.evaluate(scope) for item in self.items]

    def children(self) -> tuple[Node, ...]:
        return self.items


class Path(Node):
    """`a.b.c` or `$a.b`; segments are names or list indexes."""

    __slots__ = ("dollar", "segments", "position")

    def __init__(self, dollar: bool, segments: tuple, position: int = 0):
        self.dollar = dollar
        self.segments = segments
        self.position = position

    def evaluate(self, scope: Scope) -> Any:
        value = scope.resolve(self.dollar, self.segments)
        return None if value is MISSING else value

    def text(self) -> str:
        return ("$" if self.dollar else "") + ".".join(str(s) for s in self.segments)


class Not(Node):
    __slots__ = ("operand",)

    def __init__(self, operand: Node):
        self.operand = operand

    def evaluate(self, scope: Scope) -> bool:
        return not self.operand.evaluate(scope)

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)


class And(Node):
    """`a and b and ...`: n-ary, so a long chain is one flat node, not a deep tree."""

    __slots__ = ("operands",)

    def __init__(self, operands: tuple[Node, ...]):
        self.operands = operands

    def evaluate(self, scope: Scope) -> bool:
        return all(bool(operand.evaluate(scope)) for operand in self.operands)

    def children(self) -> tuple[Node, ...]:
        return self.operands


class Or(Node):
    """`a or b or ...`, n-ary like And."""

    __slots__ = ("operands",)

    def __init__(self, operands: tuple[Node, ...]):
        self.operands = operands

    def evaluate(self, scope: Scope) -> bool:
        return any(bool(operand.evaluate(scope)) for operand in self.operands)

    def children(self) -> tuple[Node, ...]:
        return self.operands


class Compare(Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Node, right: Node):
        self.op, self.left, self.right = op, left, right

    def evaluate(self, scope: Scope) -> bool:
        op = self.op
        left = self.left.evaluate(scope)
        if op == "==" or op == "!=":
            result = self._equal(left, scope)
            return result if op == "==" else not result
        if op == "in" or op == "not in":
            result = self._member(left, scope)
            return result if op == "in" else not result
        right = self.right.evaluate(scope)
        if not ((is_number(left) and is_number(right))
                or (type(left) is str and type(right) is str)):
            return False
        if op == "<":
            return left < right
        if op == "<=":
            return left <= right
        if op == ">":
            return left > right
        return left >= right

    def _equal(self, left: Any, scope: Scope) -> bool:
        right_node = self.right
        if isinstance(right_node, Literal) and type(right_node.value) is str:
            return prefix_match(left, right_node.value)
        return equals(left, right_node.evaluate(scope))

    def _member(self, left: Any, scope: Scope) -> bool:
        right_node = self.right
        if isinstance(right_node, ListLiteral):
            for item in right_node.items:
                if isinstance(item, Literal) and type(item.value) is str:
                    if prefix_match(left, item.value):
                        return True
                elif equals(left, item.evaluate(scope)):
                    return True
            return False
        return contains(right_node.evaluate(scope), left)

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)


def contains(container: Any, item: Any) -> bool:
    """`item in container`: substring for strings, membership for lists, key for mappings."""
    if type(container) is str:
        return type(item) is str and item in container
    if isinstance(container, list):
        return any(equals(item, element) for element in container)
    if isinstance(container, dict):
        return type(item) is str and item in container
    return False


def _startswith(value: Any, prefix: Any) -> bool:
    return type(value) is str and type(prefix) is str and value.startswith(prefix)


def _endswith(value: Any, suffix: Any) -> bool:
    return type(value) is str and type(suffix) is str and value.endswith(suffix)


def _matches(value: Any, pattern: Any) -> bool:
    if type(value) is not str or type(pattern) is not str:
        return False
    try:
        return regex.search(pattern, value, timeout=REGEX_TIMEOUT_S) is not None
    except regex.error as exc:
        raise EvaluationError(f"bad regular expression {pattern!r}: {exc}") from None
    except TimeoutError:
        raise EvaluationError(f"the regular expression {pattern!r} took too long") from None


FUNCTIONS = {
    "contains": contains,
    "startswith": _startswith,
    "endswith": _endswith,
    "matches": _matches,
}


class Call(Node):
    """`contains(a, b)` or the method form `a.contains(b)` (the receiver is the first argument)."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple[Node, ...]):
        self.name, self.args = name, args

    def evaluate(self, scope: Scope) -> bool:
        values = [arg.evaluate(scope) for arg in self.args]
        return FUNCTIONS[self.name](*values)

    def children(self) -> tuple[Node, ...]:
        return self.args


def paths(node: Node):
    """Every Path in a tree (iterative: trees are bounded but callers may be deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Path):
            yield current
        stack.extend(current.children())
