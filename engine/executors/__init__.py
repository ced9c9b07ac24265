"""Executors: how a step's agent is called. Written once, used by the local runner and the cluster."""

from engine.executors.base import Executor, StepRequest, StepResult
from engine.executors.http import HttpExecutor
from engine.executors.mock import MockExecutor, MockOutcome
from engine.executors.openai import OpenAIExecutor
from engine.executors.python_call import PythonExecutor
from engine.executors.shell import ShellExecutor

BUILTIN: dict[str, type] = {"mock": MockExecutor, "shell": ShellExecutor}

__all__ = ["BUILTIN", "Executor", "HttpExecutor", "MockExecutor", "MockOutcome", "OpenAIExecutor",
           "PythonExecutor", "ShellExecutor", "StepRequest", "StepResult"]
