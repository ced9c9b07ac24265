"""`${path}` and `{{ path }}` templates: parsed once, rendered against a Scope.

For shell agents every interpolated value is shell-quoted; a rendered string
is never parsed again, so a value holding `${...}` stays text.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from typing import Any

from engine.expressions import MISSING, ExpressionError, Path, Scope, parse_path

_MARKER = re.compile(r"\$\$\{|\$\{|\{\{")


class TemplateError(ValueError):
    """A template path did not resolve when rendering (error code `template_error`)."""


def to_text(value: Any) -> str:
    """Render a value JSON-like: `42`, `2.5`, `true`, `null`; objects and lists as JSON."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, default=str)


class Template:
    """A parsed template: literal text and paths, in order."""

    __slots__ = ("source", "parts")

    def __init__(self, source: str, parts: tuple):
        self.source = source
        self.parts = parts

    @property
    def paths(self) -> list[Path]:
        return [part for part in self.parts if isinstance(part, Path)]

    def render(self, scope: Scope, quote: Callable[[str], str] | None = None) -> str:
        """Render with every path resolved.

        Args:
            scope: what paths resolve against.
            quote: applied to each interpolated value (shlex.quote for shell agents).

        Raises:
            TemplateError: a path does not resolve.
        """
        if len(self.parts) == 1 and isinstance(self.parts[0], str):
            return self.parts[0]
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = scope.resolve(part.dollar, part.segments)
            if value is MISSING:
                raise TemplateError(f"${{{part.text()}}} does not resolve")
            text = to_text(value)
            out.append(quote(text) if quote else text)
        return "".join(out)


def parse_template(source: str) -> Template:
    """Parse `${...}`, `{{ ... }}` and the `$${` escape.

    Raises:
        ExpressionError: an unclosed marker or something other than a path inside one.
    """
    if "$" not in source and "{{" not in source:
        return Template(source, (source,))
    parts: list = []
    literal: list[str] = []
    index = 0
    for match in _MARKER.finditer(source):
        if match.start() < index:
            continue
        literal.append(source[index:match.start()])
        marker = match.group()
        if marker == "$${":
            literal.append("${")
            index = match.end()
            continue
        closer = "}" if marker == "${" else "}}"
        end = source.find(closer, match.end())
        if end < 0:
            raise ExpressionError(f"unclosed {marker}", match.start(), source)
        inner = source[match.end():end]
        try:
            path = parse_path(inner)
        except ExpressionError as exc:
            raise ExpressionError(f"{marker}{inner}{closer}: {exc.reason}", match.start(), source) from None
        text = "".join(literal)
        if text:
            parts.append(text)
        literal = []
        parts.append(path)
        index = end + len(closer)
    literal.append(source[index:])
    tail = "".join(literal)
    if tail or not parts:
        parts.append(tail)
    return Template(source, tuple(parts))


shell_quote = shlex.quote
