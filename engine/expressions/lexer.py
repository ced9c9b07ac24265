"""Tokenizer of the expression language: one pass, no backtracking."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.expressions.errors import ExpressionError

MAX_LENGTH = 4096
KEYWORDS = frozenset({"and", "or", "not", "in", "true", "false", "null"})

_PATH = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+))*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_OPERATORS = ("==", "!=", ">=", "<=", ">", "<")
_PUNCT = "()[],-"
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "path", "keyword", "number", "string", "op", "punct", "end"
    value: object
    position: int


def tokenize(source: str) -> list[Token]:
    """Split an expression into tokens.

    Raises:
        ExpressionError: on a character that starts no token, an unclosed
            string, or a source longer than MAX_LENGTH.
    """
    if not isinstance(source, str):
        raise ExpressionError("an expression must be a string")
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters")
    tokens: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch in " \t\r\n":
            i += 1
            continue
        if ch == "'" or ch == '"':
            value, i = _string(source, i)
            tokens.append(Token("string", value, i))
            continue
        if "0" <= ch <= "9":
            match = _NUMBER.match(source, i)
            text = match.group()
            value = float(text) if ("." in text or "e" in text or "E" in text) else int(text)
            tokens.append(Token("number", value, i))
            i = match.end()
            continue
        match = _PATH.match(source, i)
        if match:
            text = match.group()
            kind = "keyword" if text in KEYWORDS else "path"
            tokens.append(Token(kind, text, i))
            i = match.end()
            continue
        for op in _OPERATORS:
            if source.startswith(op, i):
                tokens.append(Token("op", op, i))
                i += len(op)
                break
        else:
            if ch in _PUNCT:
                tokens.append(Token("punct", ch, i))
                i += 1
            elif ch == "=":
                raise ExpressionError("'=' is not an operator; compare with '=='", i)
            else:
                raise ExpressionError(f"unexpected character {ch!r}", i)
    tokens.append(Token("end", None, n))
    return tokens


def _string(source: str, start: int) -> tuple[str, int]:
    quote = source[start]
    parts: list[str] = []
    i = start + 1
    while i < len(source):
        ch = source[i]
        if ch == quote:
            return "".join(parts), i + 1
        if ch == "\\" and i + 1 < len(source):
            nxt = source[i + 1]
            # Unknown escapes keep their backslash so regex patterns like '\d' read naturally.
            parts.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        parts.append(ch)
        i += 1
    raise ExpressionError("unclosed string", start)
