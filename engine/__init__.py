"""Forge's workflow engine: the .lobsterX format, its graph, expressions, outputs, governance
gates and the interpreter. Pure Python: nothing here imports Django."""

from engine.graph import CycleError, Graph
from engine.problems import Problem, WorkflowInvalid
from engine.validation import Report, load_workflow, validate_source
from engine.workflow import StepSpec, Workflow

__all__ = ["CycleError", "Graph", "Problem", "Report", "StepSpec", "Workflow", "WorkflowInvalid", "load_workflow",
           "validate_source"]
