"""What graph.js draws of a workflow version: its steps with their dependencies, where people placed them (the
truth) and the layout cached for the rest."""

from __future__ import annotations

from typing import Any

from forge.runs.compiled import new_run_workflow
from forge.workflows.layouts import layout_of, placements_of
from forge.workflows.models import WorkflowVersion


def workflow_graph(version: WorkflowVersion) -> dict[str, Any]:
    workflow, _ = new_run_workflow(version)
    return {"nodes": [{"id": s.id, "kind": s.kind, "deps": list(s.deps), "name": s.model.name or ""}
                          for s in workflow.steps],
            "layout": layout_of(version.content_hash), "placements": placements_of(version.workflow_id)}
