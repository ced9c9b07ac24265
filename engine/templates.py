"""`${path}` and `{{ path }}` templates: parsed once, rendered against a Scope.

A rendered string is never parsed again, so a value holding `${...}` stays
text. For shell agents no value is written into the command at all: each
becomes an environment variable of its own, which the command refers to in
the way its quoting context needs (engine/shellwords.py), so the shell
never reads a value as syntax.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.expressions import MISSING, ExpressionError, Path, Scope, parse_path
from engine.loop_checks import LOOP_VALUES
from engine.shellslots import Slot, reference
from engine.shellwords import scan

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

    __slots__ = ("source", "parts", "_slots")

    def __init__(self, source: str, parts: tuple):
        self.source = source
        self.parts = parts
        self._slots: list[Slot] | None = None

    @property
    def paths(self) -> list[Path]:
        return [part for part in self.parts if isinstance(part, Path)]

    def render(self, scope: Scope) -> str:
        """Render with every path resolved, values as text.

        Raises:
            TemplateError: a path does not resolve.
        """
        if len(self.parts) == 1 and isinstance(self.parts[0], str):
            return self.parts[0]
        return "".join(part if isinstance(part, str) else to_text(_resolve(scope, part)) for part in self.parts)

    def shell_slots(self) -> list[Slot]:
        """Each placeholder's quoting context in a shell command, and why a value cannot stand there if so."""
        if self._slots is None:
            self._slots = scan(self.parts) if len(self.parts) > 1 or not isinstance(self.parts[0], str) else []
        return self._slots

    def render_shell(self, scope: Scope) -> tuple[str, dict[str, str]]:
        """Render for a shell agent: the command refers to variables, and the variables hold the values.

        Returns:
            The command and its variables (`FORGE_V1`, ...: one per distinct path).

        Raises:
            TemplateError: a path does not resolve, a placeholder stands where a value would be parsed
                again (shellslots), or a value holds a NUL character.
        """
        slots = self.shell_slots()
        for slot in slots:
            if slot.problem:
                raise TemplateError(slot.problem)
        out: list[str] = []
        names: dict[str, str] = {}
        env: dict[str, str] = {}
        placeholders = iter(slots)
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            name = names.get(part.text())
            if name is None:
                text = to_text(_resolve(scope, part))
                if "\0" in text:
                    raise TemplateError(f"the value of ${{{part.text()}}} holds a NUL character, which no process "
                                        "can be given")
                name = names[part.text()] = f"{VALUE_PREFIX}{len(names) + 1}"
                env[name] = text
            out.append(reference(next(placeholders).form, name))
        return "".join(out), env


def _resolve(scope: Scope, path: Path) -> Any:
    value = scope.resolve(path.dollar, path.segments)
    if value is MISSING:
        hint = ""
        if not path.dollar and len(path.segments) == 1 and path.segments[0] in LOOP_VALUES:
            hint = f" (a loop step's own values are written ${{loop.{path.segments[0]}}})"
        raise TemplateError(f"${{{path.text()}}} does not resolve{hint}")
    return value


VALUE_PREFIX = "FORGE_V"
"""A shell step's value variables are FORGE_V1, FORGE_V2, ...: no other variable of its environment starts so."""


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

