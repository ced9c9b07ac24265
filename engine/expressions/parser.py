"""Recursive-descent parser: precedence as Python (`or` < `and` < `not` < comparisons)."""

from __future__ import annotations

import regex

from engine.expressions.errors import ExpressionError
from engine.expressions.lexer import Token, tokenize
from engine.expressions.nodes import (
    FUNCTIONS, And, Call, Compare, ListLiteral, Literal, Node, Not, Or, Path,
)

MAX_DEPTH = 32
MAX_LIST_ITEMS = 1000
_COMPARISONS = frozenset({"==", "!=", ">", ">=", "<", "<="})
_CONSTANTS = {"true": True, "false": False, "null": None}


def parse(source: str) -> Node:
    """Parse an expression into a tree.

    Args:
        source: the expression text (at most 4096 characters).

    Returns:
        The root node; call `evaluate(scope)` on it.

    Raises:
        ExpressionError: with the position where parsing failed.
    """
    parser = _Parser(source)
    node = parser.expression()
    token = parser.peek()
    if token.kind != "end":
        raise ExpressionError(f"unexpected {_describe(token)}", token.position, source)
    return node


def parse_path(source: str) -> Path:
    """Parse a bare path such as `init.outputs.x` or `$gate.approved`."""
    if not isinstance(source, str):
        raise ExpressionError("a path must be a string")
    tokens = tokenize(source.strip())
    if len(tokens) != 2 or tokens[0].kind != "path":
        raise ExpressionError(f"{source.strip()!r} is not a path such as step.outputs.field", 0, source)
    return _make_path(tokens[0].value, tokens[0].position)


def _make_path(text: str, position: int) -> Path:
    dollar = text.startswith("$")
    parts = (text[1:] if dollar else text).split(".")
    segments = tuple(int(p) if p.isdigit() else p for p in parts)
    return Path(dollar, segments, position)


def _describe(token: Token) -> str:
    if token.kind == "end":
        return "end of expression"
    if token.kind == "string":
        return f"string {token.value!r}"
    return f"{token.value!r}"


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.tokens = tokenize(source)
        self.index = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def fail(self, message: str, token: Token | None = None):
        token = token or self.peek()
        raise ExpressionError(message, token.position, self.source)

    def expect(self, kind: str, value: str) -> Token:
        token = self.peek()
        if token.kind != kind or token.value != value:
            self.fail(f"expected {value!r} but found {_describe(token)}")
        return self.take()

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"the expression nests deeper than {MAX_DEPTH} levels")

    def expression(self) -> Node:
        self.enter()
        operands = [self.and_expression()]
        while self.peek().kind == "keyword" and self.peek().value == "or":
            self.take()
            operands.append(self.and_expression())
        self.depth -= 1
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def and_expression(self) -> Node:
        operands = [self.not_expression()]
        while self.peek().kind == "keyword" and self.peek().value == "and":
            self.take()
            operands.append(self.not_expression())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def not_expression(self) -> Node:
        token = self.peek()
        if token.kind == "keyword" and token.value == "not":
            self.take()
            self.enter()
            node = Not(self.not_expression())
            self.depth -= 1
            return node
        return self.comparison()

    def comparison(self) -> Node:
        left = self.operand()
        op = self._comparison_operator()
        if op is None:
            return left
        right = self.operand()
        if self._comparison_operator(consume=False) is not None:
            self.fail("comparisons cannot be chained; join them with 'and'")
        return Compare(op, left, right)

    def _comparison_operator(self, consume: bool = True) -> str | None:
        token = self.peek()
        if token.kind == "op" and token.value in _COMPARISONS:
            op = token.value
        elif token.kind == "keyword" and token.value == "in":
            op = "in"
        elif (token.kind == "keyword" and token.value == "not"
              and self.tokens[self.index + 1].kind == "keyword" and self.tokens[self.index + 1].value == "in"):
            op = "not in"
        else:
            return None
        if consume:
            self.index += 2 if op == "not in" else 1
        return op

    def operand(self) -> Node:
        token = self.peek()
        if token.kind == "end":
            self.fail("expected a value but the expression ended")
        if token.kind == "string" or token.kind == "number":
            self.take()
            return Literal(token.value)
        if token.kind == "punct" and token.value == "-":
            self.take()
            number = self.peek()
            if number.kind != "number":
                self.fail("'-' must be followed by a number")
            self.take()
            return Literal(-number.value)
        if token.kind == "keyword" and token.value in _CONSTANTS:
            self.take()
            return Literal(_CONSTANTS[token.value])
        if token.kind == "punct" and token.value == "(":
            self.take()
            node = self.expression()
            self.expect("punct", ")")
            return node
        if token.kind == "punct" and token.value == "[":
            return self.list_literal()
        if token.kind == "path":
            self.take()
            if self.peek().kind == "punct" and self.peek().value == "(":
                return self.call(token)
            return _make_path(token.value, token.position)
        self.fail(f"expected a value but found {_describe(token)}")

    def list_literal(self) -> Node:
        self.enter()
        self.take()
        items: list[Node] = []
        if not (self.peek().kind == "punct" and self.peek().value == "]"):
            while True:
                items.append(self.expression())
                if len(items) > MAX_LIST_ITEMS:
                    self.fail(f"a list may hold at most {MAX_LIST_ITEMS} items")
                if self.peek().kind == "punct" and self.peek().value == ",":
                    self.take()
                    continue
                break
        self.expect("punct", "]")
        self.depth -= 1
        return ListLiteral(tuple(items))

    def call(self, token: Token) -> Node:
        text = token.value
        if "." in text:
            receiver_text, name = text.rsplit(".", 1)
            receiver: list[Node] = [_make_path(receiver_text, token.position)]
        else:
            name, receiver = text, []
        if name not in FUNCTIONS:
            self.fail(f"unknown function {name!r}; known: {', '.join(sorted(FUNCTIONS))}", token)
        self.enter()
        self.take()
        args: list[Node] = list(receiver)
        if not (self.peek().kind == "punct" and self.peek().value == ")"):
            while True:
                args.append(self.expression())
                if self.peek().kind == "punct" and self.peek().value == ",":
                    self.take()
                    continue
                break
        self.expect("punct", ")")
        self.depth -= 1
        if len(args) != 2:
            self.fail(f"{name}() takes 2 values, got {len(args)}", token)
        pattern = args[1]
        if name == "matches" and isinstance(pattern, Literal) and isinstance(pattern.value, str):
            try:
                regex.compile(pattern.value)
            except regex.error as exc:
                self.fail(f"bad regular expression {pattern.value!r}: {getattr(exc, 'msg', exc)}", token)
        return Call(name, tuple(args))
