"""Executors: how a step's agent is called. Written once, used by the local runner and the cluster."""

from engine.executors.base import Executor, StepRequest, StepResult
from engine.executors.mock import MockExecutor, MockOutcome
from engine.executors.shell import ShellExecutor

BUILTIN: dict[str, type] = {"mock": MockExecutor, "shell": ShellExecutor}

__all__ = ["BUILTIN", "Executor", "MockExecutor", "MockOutcome", "ShellExecutor", "StepRequest", "StepResult"]
