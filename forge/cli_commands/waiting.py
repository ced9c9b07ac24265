"""What both modes of `forge` share that is not printing: the exit of a command that already said why, and the
text of a reply."""

from __future__ import annotations

import sys
from pathlib import Path

from engine.terminal import UsageError


class Exit(Exception):
    """Stop the command with `code`; what went wrong was already written."""

    def __init__(self, code: int):
        self.code = code


def read_reply_text(options) -> str:
    text, path = options["text"], options["file"]
    if (text is None) == (path is None):
        raise UsageError("give the reply as TEXT or with --file PATH (- for stdin), not both")
    if path is None:
        return text
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        return data.decode("utf-8")
    except OSError as exc:
        raise UsageError(f"--file: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--file: {path} is not UTF-8 text") from None
