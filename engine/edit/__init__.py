"""Editing a workflow's text: typed patches spliced into the text, its outline, copy and paste of steps.

Pure Python, no Django: the console's editor endpoints call these.
"""

from engine.edit.changes import changes_between
from engine.edit.errors import PatchError, Patched
from engine.edit.linediff import unified_diff
from engine.edit.outline import outline
from engine.edit.pasting import copy_steps
from engine.edit.patches import apply_patch

__all__ = ["PatchError", "Patched", "apply_patch", "changes_between", "copy_steps", "outline", "unified_diff"]
