"""A run's report as every client shows it: the local runner's JSON object (spec section 12, `python -m engine run
--json`), with each argument that reads as a secret hidden as the run view hides it. The API's
`GET /api/v1/runs/{id}/report` answers it and the local `forge status --json` and `run --wait --json` print it, so
both modes of the CLI print the same bytes."""

from __future__ import annotations

from typing import Any

from engine.secrets import redact_secrets
from forge.runs.models import Run
from forge.runs.reads.secret_args import hider
from forge.runs.selectors import run_report


def shown_report(run: Run) -> dict[str, Any]:
    """The report of `run` as it is now. An argument is among the report's `variables` (unless a step's output
    took its name): there it is shown as the run's header shows it (redacted by its name, whatever its type); and
    each text anywhere in the report has the secret values replaced, as the step panel and the log show them."""
    found = run_report(run)
    args = run.args if isinstance(run.args, dict) else {}
    redacted = redact_secrets(args)
    variables = found["variables"]
    for name, value in args.items():
        if name in variables and variables[name] == value and redacted.get(name) != value:
            variables[name] = redacted[name]
    return hider(args)(found)

