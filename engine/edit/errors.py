"""What a patch gives back, and how it refuses."""

from __future__ import annotations

from dataclasses import dataclass, field


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
