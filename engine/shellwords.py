"""The quoting context of each placeholder in a shell agent's command (spec section 6).

A small scanner of the author's literal text, not a shell parser: it follows
quotes, backslashes, `$(...)`, backticks, `${...}`, arithmetic, comments and
heredocs, and the words of each simple command, which is what the contexts
(engine/shellslots.py says how each is written) and the refusals need. A
context it misjudges can only change how a value is split or printed, never
run it: the shell does not parse a variable's value again, except in the
places shellslots refuses.
"""

from __future__ import annotations

from engine.shellslots import (ANSI, ARITH, BACKSLASH, NAME, QUOTED, QUOTED_HEREDOC, SINGLE, STDIN, TOO_DEEP, WORD,
                               Command, Slot, end_pipeline)

_LISTS = frozenset({"top", "paren", "tick"})  # command lists: the top level, $(...) or <(...), backquotes
_FORMS = {"dq": QUOTED, "heredoc": QUOTED, "sq": SINGLE, "ansi": ANSI}
MAX_DEPTH = 64  # quotes and substitutions inside one another: each placeholder is checked against them all


def scan(parts: tuple) -> list[Slot]:
    """The slots of a parsed template's parts (literal strings and paths), in order."""
    items: list = []
    for part in parts:
        if isinstance(part, str):
            items.extend(part)
        else:
            items.append(part)
    scanner = _Scanner(items)
    scanner.loop()
    for frame in reversed(scanner.stack):
        if frame.kind in _LISTS:
            scanner.end_command(frame, pipe=False)
    return scanner.slots


class _Frame:
    """A command list, or a quote, `${...}`, arithmetic or heredoc body inside the word `cmd` is reading."""

    def __init__(self, kind: str, cmd: _Frame | None = None, *, quoted: bool = False, delimiter: str = ""):
        self.kind, self.quoted, self.depth, self.phase = kind, quoted, 0, "name"
        self.cmd = self if kind in _LISTS else cmd
        self.delimiter, self.strip, self.feeds_shell, self.line_start = delimiter, False, False, True
        # command lists only:
        self.command = Command()  # the simple command being read
        self.word: list[str] | None = None
        self.word_quoted = self.open_pipe = False
        self.target: str | None = None  # the word being read is a redirection's: file, fd, herestring, heredoc
        self.pipeline: list[Command] = []  # the earlier commands of the current pipeline
        self.pending: list[_Frame] = []  # heredoc bodies that start after the next newline

    def add(self, ch: str) -> None:
        cmd = self.cmd
        if cmd is not None:
            if cmd.word is None:
                cmd.word, cmd.open_pipe = [], False
            cmd.word.append(ch)


class _Scanner:
    def __init__(self, items: list):
        self.items, self.i = items, 0
        self.stack: list[_Frame] = [_Frame("top")]
        self.slots: list[Slot] = []
        self.escaped = False

    def peek(self, k: int = 0):
        j = self.i + k
        return self.items[j] if j < len(self.items) and isinstance(self.items[j], str) else None

    def loop(self) -> None:
        while self.i < len(self.items):
            item, frame = self.items[self.i], self.stack[-1]
            if isinstance(item, str):
                getattr(self, "on_" + ("cmd" if frame.kind in _LISTS else frame.kind))(frame, item)
            else:
                self.placeholder(item, frame)
                self.i += 1

    def placeholder(self, path, frame: _Frame) -> None:
        form = (QUOTED if frame.quoted else WORD) if frame.kind == "param" else _FORMS.get(frame.kind, WORD)
        slot = Slot(path, form)
        self.slots.append(slot)
        if self.escaped:
            slot.refuse(BACKSLASH)
            self.escaped = False
        if len(self.stack) > MAX_DEPTH:
            slot.refuse(TOO_DEEP)
            return
        if frame.kind == "arith" or (frame.kind == "param" and frame.phase in ("index", "offset")):
            slot.refuse(ARITH)
        elif frame.kind == "param" and frame.phase == "name":
            slot.refuse(NAME)
        frame.line_start = False
        innermost, skip = True, False
        for outer in reversed(self.stack):
            if outer.kind == "heredoc":
                if outer.quoted:
                    slot.refuse(QUOTED_HEREDOC)
                if outer.feeds_shell:
                    slot.refuse(STDIN)
                innermost, skip = False, True
            elif outer.kind in _LISTS and skip:
                skip = False  # the list that declared the heredoc: that command has ended
            elif outer.kind in _LISTS:
                if innermost:
                    outer.add("\0")
                outer.command.place(slot, outer.target, "".join((outer.word or [])[:12]), innermost)
                innermost = False

    # -- command lists ---------------------------------------------------

    def on_cmd(self, f: _Frame, ch: str) -> None:
        nxt = self.peek(1)
        self.i += 1
        if ch == "\\":
            self.i += nxt == "\n"  # a line continuation
            if nxt != "\n":
                self.escape(f)
        elif ch in "'\"":
            f.add("")
            f.word_quoted = True
            self.stack.append(_Frame("sq" if ch == "'" else "dq", f))
        elif ch == "`":
            f.add("\0")
            self.backticks(in_dq=False)
        elif ch == "$":
            self.dollar(f, quoted=False)
        elif ch in " \t" or (f.command.cond and ch in "&|()"):
            self.end_word(f)
        elif ch == "\n":
            if not f.command.cond and not (f.word is None and f.command.empty and f.open_pipe):
                self.end_command(f, pipe=False)
            if f.pending:
                self.stack.append(f.pending.pop(0))
        elif ch == "#" and f.word is None:
            while self.i < len(self.items) and self.items[self.i] != "\n":
                if not isinstance(self.items[self.i], str):
                    self.slots.append(Slot(self.items[self.i], WORD))  # in a comment: never run
                self.i += 1
        elif ch in ";&|" and not (ch == "&" and nxt == ">"):
            self.i += nxt == ch or (ch == "|" and nxt == "&")
            self.end_command(f, pipe=(ch == "|" and nxt != "|"))
        elif ch == "(" and nxt == "(" and f.word is None and \
                (f.command.words.count, f.command.words.previous) in ((0, ""), (1, "for")):
            self.i += 1
            self.stack.append(_Frame("arith", f))
        elif ch in "()":
            self.end_command(f, pipe=False)
            if ch == ")" and f.kind == "paren" and f.depth == 0:
                self.stack.pop()
            else:
                f.depth += 1 if ch == "(" else -1
        elif ch in "<>" and nxt == "(":  # process substitution
            f.add(ch)
            self.i += 1
            self.stack.append(_Frame("paren"))
        elif ch in "<>&" and not f.command.cond:
            self.redirect(f, ch)
        else:
            f.add(ch)

    def redirect(self, f: _Frame, ch: str) -> None:
        if f.word is not None and "".join(f.word).isdigit():
            f.word = None  # an io number, not an argument
        self.end_word(f)
        op = ch + (self.peek(0) or "\0") + (self.peek(1) or "\0")
        if op.startswith("<<<"):
            f.target, n = "herestring", 2
        elif op.startswith("<<"):
            f.target, f.strip = "heredoc", op[2:3] == "-"
            n = 1 + f.strip
        elif op[:2] in ("<&", ">&"):
            f.target, n = "fd", 1
        else:
            f.target, n = "file", int(op[:2] in (">>", ">|", "<>", "&>"))
        self.i += n

    def end_word(self, f: _Frame) -> None:
        if f.word is None:
            return
        text, target, quoted = "".join(f.word), f.target, f.word_quoted
        f.word, f.target, f.word_quoted = None, None, False
        if target == "heredoc":
            heredoc = _Frame("heredoc", quoted=quoted, delimiter=text)
            heredoc.strip = f.strip
            f.command.heredocs.append(heredoc)
        elif target is None:
            f.command.add_word(text)

    def end_command(self, f: _Frame, *, pipe: bool) -> None:
        self.end_word(f)
        command, f.command, f.target, f.open_pipe = f.command, Command(), None, pipe
        if command.cond:
            command.end_cond()
        if not command.empty:
            f.pipeline.append(command)
            f.pending.extend(command.heredocs)
        if not pipe:
            end_pipeline(f.pipeline)
            f.pipeline = []

    # -- quotes and expansions inside a word -------------------------------

    def escape(self, f: _Frame) -> None:
        """After a backslash that quotes the next item."""
        if self.i < len(self.items) and not isinstance(self.items[self.i], str):
            self.escaped = True  # the reference that replaces it would be escaped
        elif self.i < len(self.items):
            if f.kind in _LISTS:
                f.word_quoted = True
            f.add(self.items[self.i])
            self.i += 1

    def dollar(self, f: _Frame, *, quoted: bool) -> None:
        """After a `$`."""
        nxt, cmd = self.peek(0), f.cmd
        f.add("$")
        if nxt is not None and (nxt in "({_@*#?$!-" or nxt.isalnum()):
            f.add("\0")  # an expansion: the word's text is only known when the command runs
        if nxt == "(" and self.peek(1) == "(":
            self.i += 2
            self.stack.append(_Frame("arith", cmd))
        elif nxt == "(":
            self.i += 1
            self.stack.append(_Frame("paren"))
        elif nxt == "{":
            self.i += 1
            self.stack.append(_Frame("param", cmd, quoted=quoted))
        elif nxt == "'" and not quoted:
            self.i += 1
            self.stack.append(_Frame("ansi", cmd))

    def backticks(self, *, in_dq: bool) -> None:
        """Scan what backquotes hold as the inner shell reads it: with their own escapes undone."""
        inner, j, items = [], self.i, self.items
        unescape = "$`\\\"" if in_dq else "$`\\"
        while j < len(items) and items[j] != "`":
            if items[j] == "\\" and j + 1 < len(items) and isinstance(items[j + 1], str) and items[j + 1] in unescape:
                j += 1
            inner.append(items[j])
            j += 1
        saved, depth = self.items, len(self.stack)
        self.items, self.i = inner, 0
        self.stack.append(_Frame("tick"))
        self.loop()
        while len(self.stack) > depth:
            frame = self.stack.pop()
            if frame.kind in _LISTS:
                self.end_command(frame, pipe=False)
        self.items, self.i = saved, j + 1

    def on_sq(self, f: _Frame, ch: str) -> None:
        self.i += 1
        if ch == "'" and f.kind != "dq":
            self.stack.pop()
        elif ch == "\\" and f.kind == "ansi":
            self.escape(f)
        elif ch == '"' and f.kind == "dq":
            self.stack.pop()
        elif f.kind == "dq" and ch in "\\$`":
            self.i -= 1
            self.on_word(f, ch)
        else:
            f.add(ch)

    on_ansi = on_dq = on_sq

    def on_param(self, f: _Frame, ch: str) -> None:
        """Inside `${...}`: a name (and index), then an operator and its word, or an offset."""
        self.i += 1
        if f.phase == "name" and (ch.isalnum() or ch == "_" or (ch in "#!@*?$-" and self.items[self.i - 2] == "{")):
            return
        if f.phase in ("name", "index") and ch in "[]":
            f.phase = "index" if ch == "[" else "name"
        elif f.phase == "name" and ch != "}":
            f.phase = "offset" if ch == ":" and self.peek(0) not in tuple("-=+?") else "word"
        elif ch == "}" and f.depth == 0:
            self.stack.pop()
        else:
            self.i -= 1
            self.on_word(f, ch)

    def on_arith(self, f: _Frame, ch: str) -> None:
        if ch == ")" and f.depth == 0:
            self.i += 2 if self.peek(1) == ")" else 1
            self.stack.pop()
        elif ch in "()":
            self.i += 1
            f.depth += 1 if ch == "(" else -1
        else:
            self.on_word(f, ch)

    def on_word(self, f: _Frame, ch: str) -> None:
        """Backslashes, expansions and quotes inside double quotes, `${...}` words and arithmetic."""
        self.i += 1
        if ch == "\\":
            self.escape(f)
        elif ch == "$":
            self.dollar(f, quoted=f.quoted or f.kind in ("dq", "heredoc"))
        elif ch == "`":
            f.add("\0")
            self.backticks(in_dq=f.quoted or f.kind in ("dq", "heredoc"))
        elif ch == '"' or (ch == "'" and not f.quoted):
            self.stack.append(_Frame("dq" if ch == '"' else "sq", f.cmd))
        elif ch in "{}":
            f.depth += 1 if ch == "{" else -1
        else:
            f.add(ch)

    def on_heredoc(self, f: _Frame, ch: str) -> None:
        if f.line_start:
            f.line_start = False
            end = self.i
            while end < len(self.items) and self.items[end] != "\n" and isinstance(self.items[end], str):
                end += 1
            if end == len(self.items) or self.items[end] == "\n":
                line = "".join(self.items[self.i:end])
                if (line.lstrip("\t") if f.strip else line) == f.delimiter:
                    self.i = end + 1
                    self.stack.pop()
                    if self.stack[-1].pending:
                        self.stack.append(self.stack[-1].pending.pop(0))
                    return
        self.i += 1
        if ch == "\n":
            f.line_start = True
        elif f.quoted:
            pass
        elif ch == "\\":
            if self.peek(0) in ("$", "`", "\\", "\n"):
                self.i += 1
            elif self.i < len(self.items) and self.peek(0) is None:
                self.escaped = True
        elif ch in "$`":
            self.i -= 1
            self.on_word(f, ch)
