"""The one way to compile a workflow version, cached: a run's with the step-library entries it kept (what its
runtime replays, so a deleted or edited entry changes nothing about a run that used it), a new run's with
today's library. The console reads runs only through `run_workflow` (an import-linter contract says so)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

from engine.validation import load_workflow
from engine.workflow import Workflow
from forge.runs.models import Run
from forge.workflows.models import WorkflowVersion
from forge.workflows.services import step_library

CACHED = 64
_WORKFLOWS: OrderedDict[tuple[int, str], Workflow] = OrderedDict()
_LOCK = threading.Lock()


def _library_key(library: dict[str, Any]) -> str:
    """The entries' content, not only their names: an entry edited between two runs compiles differently."""
    if not library:
        return ""
    text = json.dumps(library, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _compiled(version_id: int, library: dict[str, Any], version=None) -> Workflow:
    """`version` is read (from `version` or by id) only when the cache misses: a hit costs no query."""
    key = (version_id, _library_key(library))
    with _LOCK:
        found = _WORKFLOWS.get(key)
        if found is not None:
            _WORKFLOWS.move_to_end(key)
            return found
    source = (version or WorkflowVersion.objects.only("source").get(pk=version_id)).source
    # shell_agents=(): the save checked placeholders against the shell agents of its day; dispatch checks them again
    workflow = load_workflow(source.encode("utf-8"), library=library, shell_agents=())
    with _LOCK:
        _WORKFLOWS[key] = workflow
        while len(_WORKFLOWS) > CACHED:
            _WORKFLOWS.popitem(last=False)
    return workflow


def run_workflow(run: Run) -> Workflow:
    """The compiled workflow the run pinned: its version with the library entries it was started with."""
    version = run.version if Run.version.is_cached(run) else None
    return _compiled(run.version_id, run.library or {}, version)


def new_run_workflow(version: WorkflowVersion) -> tuple[Workflow, dict[str, dict]]:
    """The version compiled with today's library, for a run not yet started, and the entries it uses (the run
    keeps that snapshot). WorkflowInvalid when today's library no longer has an entry it names."""
    entries = step_library()
    workflow = _compiled(version.pk, entries, version)
    used = {spec.model.library_step for spec in workflow.steps if spec.model.library_step}
    return workflow, {name: entries[name] for name in sorted(used) if name in entries}
