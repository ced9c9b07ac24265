"""What a patch gives back, and how it refuses."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import yaml
from ruamel.yaml.error import YAMLError


class PatchError(ValueError):
    """A patch that cannot be applied; the text is left as it was.

    Codes: not_parsed, too_large, bad_patch, bad_id, unknown_step, duplicate_id, bad_path,
    bad_value, implicit_edge, cycle, self_edge, use_rename.
    """

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclass
class Patched:
    """The new text, the CodeMirror changes that turn the old text into it, and ids a paste renamed."""

    text: str
    changes: list[dict] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    loaded: Any = field(default=None, repr=False, compare=False)  # load(text), when the patch made it


@contextlib.contextmanager
def refused_not_raised():
    """A text the patch engine cannot handle is refused (bad_patch), never an exception that the console
    would answer with a 500: hostile text may reach a corner the checks did not foresee."""
    try:
        yield
    except PatchError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError, YAMLError,
            yaml.YAMLError) as exc:
        raise PatchError("bad_patch", f"this cannot be done on this text ({type(exc).__name__})") from exc
