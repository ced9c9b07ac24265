"""The task paths queued before the runtime moved to forge/runtime/: a task already in a queue runs."""

from forge.runtime.tasks import advance_run, execute_step, recover  # noqa: F401
