"""System checks that stop `qcluster`, `runserver` and every command when the queue could run a step twice."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, register


@register()
def queue_timing(app_configs, **kwargs):
    """django-q2 re-delivers a task still unacknowledged after `retry` seconds, and kills one past `timeout`."""
    errors = []
    q = settings.Q_CLUSTER
    longest = settings.FORGE_STEP_TIMEOUT_MAX_S
    margin = settings.FORGE_TASK_MARGIN_S
    timeout, retry = q.get("timeout"), q.get("retry")
    if timeout is None or timeout < longest + margin:
        errors.append(Error(
            f"Q_CLUSTER timeout is {timeout}; it must be at least the longest step timeout "
            f"({longest} s) plus the margin ({margin} s), or django-q2 kills workers in the middle of steps",
            hint="leave Q_CLUSTER to the settings, or lower FORGE_STEP_TIMEOUT_MAX_S", id="forge.E001"))
    if retry is None or retry <= (timeout or 0) or retry <= longest + margin:
        errors.append(Error(
            f"Q_CLUSTER retry is {retry} s; it must be above the task timeout ({timeout} s) and the longest "
            f"step timeout ({longest} s) plus the margin ({margin} s), or a running step is handed to a "
            f"second worker", hint="unset FORGE_TASK_RETRY_S, or raise it", id="forge.E002"))
    return errors


@register(Tags.security, deploy=True)
def shell_sandbox(app_configs, **kwargs):
    """A shell step outside its sandbox reads what the worker can: the secret key, the database, its environment."""
    if settings.FORGE_SHELL_SANDBOX.enabled:
        return []
    return [Error("FORGE_SHELL_SANDBOX is off: shell steps run as the worker, and can read the secret key, the "
                  "database and the worker's environment", hint="unset FORGE_SHELL_SANDBOX (install bubblewrap)",
                  id="forge.E003")]
