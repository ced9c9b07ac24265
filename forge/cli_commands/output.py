"""What `forge` prints, from the API's JSON shapes (its Output serializers' data): the local mode serializes with
the same classes the API's views use, the remote mode reads them from the server, and both print through here,
so a command prints the same lines and JSON in either mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from engine.problems import Problem
from engine.terminal import print_problems, print_run
from engine.validation import Report, validate_source
from engine.yamlload import YamlLoadError, load

Write = Callable[[str], Any]
APPROVERS = "Approvers"  # forge.accounts.roles.APPROVERS: who decides when a schedule names no group
FINISHED = ("completed", "failed", "cancelled")  # a run report's status once the run has ended
PAUSED = "paused"  # its status while only a person can move the run on (forge.runs.selectors.is_paused)


def as_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def shortened(text: str, limit: int = 200) -> str:
    """An iteration's output on one line, cut to `limit` characters."""
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def started(run: dict) -> dict:
    """`forge run --json` without --wait: the run started (from RunOut)."""
    return {"run": run["id"], "status": run["status"]}


def approval_rows(approvals: list[dict]) -> list[dict]:
    """`forge approvals --json`: one row per pending request (from ApprovalOut)."""
    rows = []
    for a in approvals:
        row = {"run": a["run"], "workflow": a["workflow"], "step": a["step"], "kind": a["kind"],
               "options": a["options"], "message": a["message"], "requested_at": a["requested_at"],
               "expires_at": a["expires_at"]}
        if a["kind"] == "reply":
            row.update(iteration=a["iteration"], output=shortened(a["output"]))
        rows.append(row)
    return rows


def print_approvals(rows: list[dict], write: Write) -> None:
    if not rows:
        write("no pending approvals")
    for row in rows:
        if row["kind"] == "reply":
            write(f"run {row['run']} {row['workflow']} / {row['step']} (reply, iteration {row['iteration']}): "
                  f"{row['message']}  [forge reply {row['run']} {row['step']} TEXT]")
            if row["output"]:
                write(f"    output: {row['output']}")
        elif row["kind"] == "start":  # a held run's start names no step: `forge approve RUN`
            write(f"run {row['run']} {row['workflow']} (start): {row['message']}  [forge approve|reject {row['run']}]")
        else:
            write(f"run {row['run']} {row['workflow']} / {row['step']} ({row['kind']}): {row['message']}  "
                  f"[{'|'.join(row['options'])}]")


def decided(approval: dict, decision: str) -> str:
    return f"run {approval['run']} / {approval['step'] or 'start'}: {decision}"


def replied(approval: dict, text: str) -> str:
    return (f"run {approval['run']} / {approval['step']}: replied to iteration {approval['iteration']} "
            f"({len(text.encode('utf-8'))} bytes)")


def cancelled(run: dict) -> str:
    return f"run {run['id']}: cancel requested"


def restarted(run: dict) -> dict:
    """`forge restart --json` (from RunOut of the new run)."""
    return {"run": run["id"], "restarted_from": run["restarted_from"], "step": run["restart_from_step"]}


def print_restarted(row: dict, write: Write) -> None:
    write(f"run {row['run']} started from step {row['step']} of run {row['restarted_from']}")


def workflow_rows(workflows: list[dict]) -> list[dict]:
    """`forge workflows --json` (from WorkflowOut)."""
    return [{"name": w["name"], "versions": w["version_count"], "latest": w["latest_version"],
             "description": w["description"]} for w in workflows]


def print_workflows(rows: list[dict], write: Write) -> None:
    for row in rows:
        write(f"{row['name']:<32} v{row['latest']}  {row['versions']} version(s)  {row['description']}")


def report_of(found: dict) -> Report:
    """An engine Report from its JSON (`valid`, `problems`, `warnings`)."""
    return Report(problems=[Problem(**p) for p in found.get("problems", [])],
                  warnings=[Problem(**w) for w in found.get("warnings", [])])


def steps_in(source: str) -> int:
    try:
        value = load(source).value
    except YamlLoadError:
        return 0
    steps = value.get("steps") if isinstance(value, dict) else None
    return len(steps) if isinstance(steps, list) else 0


def print_validation(path: str, found: dict, source: str, write: Write) -> None:
    """What `forge validate` prints: each problem and warning, then `FILE: valid (N steps)`."""
    print_problems(path, report_of(found), write)
    if found["valid"]:
        write(f"{path}: valid ({steps_in(source)} steps)")


def print_rejected(path: str, problems: list[dict], json_wanted: bool, out: Write, err: Write) -> None:
    """A workflow file saving refused: its problems (JSON on stdout with --json), and the lines on stderr."""
    refused = {"valid": False, "problems": problems, "warnings": []}
    if json_wanted:
        out(as_json(refused))
    print_problems(path, report_of(refused), write=err)


def when(text: str | None) -> str:
    """A moment of the API's JSON as the CLI shows it: `YYYY-MM-DD HH:MM UTC`, or `-`."""
    return f"{text[:16].replace('T', ' ')} UTC" if text else "-"


def approvers_words(approvers: list[str]) -> str:
    return " or ".join(sorted(approvers)) or APPROVERS


def print_schedules(rows: list[dict], write: Write) -> None:
    if not rows:
        write("no schedules")
    for row in rows:
        state = "enabled" if row["enabled"] else "paused"
        approval = f"approval by {approvers_words(row['approvers'])}" if row["require_approval"] else "no approval"
        last = (f"last {row['last_dispatch_status']} at {when(row['last_dispatch_at'])}: "
                f"{row['last_dispatch_detail']}" if row["last_dispatch_status"] else "never fired")
        write(f"{row['id']:>4}  {row['workflow']:<24} {row['cron']:<16} {row['timezone']:<16} "
              f"{state:<8} {row['overlap']:<14} {approval:<24} next {when(row['next_fire_at'])}  {last}")


def schedule_added(row: dict) -> str:
    held = (f"; each run waits for approval by {approvers_words(row['approvers'])} before its first step"
            if row["require_approval"] else "")
    return (f"schedule {row['id']} added: {row['workflow']} at {row['cron']} ({row['timezone']}); "
            + (f"next fire {when(row['next_fire_at'])}" if row["enabled"] else "paused") + held)


def schedule_changed(row: dict, verb: str) -> str:
    return f"schedule {row['id']} {verb}d" + (f"; next fire {when(row['next_fire_at'])}" if row["next_fire_at"]
                                              else "")


def kill_switch_words(switch: dict) -> str:
    by = f" by {switch['changed_by']}" if switch["changed_by"] else ""
    at = f" at {when(switch['changed_at'])}" if switch["changed_at"] else ""
    why = f": {switch['reason']}" if switch["reason"] else ""
    if switch["engaged"]:
        return f"kill switch engaged{by}{at}{why}; no schedule starts a run"
    return (f"kill switch off{f' (lifted{by}{at})' if switch['changed_at'] else ''}; "
            f"schedules fire at their cron times")


def print_report(report: dict, write: Write, name: str, *, calls: bool = False) -> None:
    """A run's report for people: one line per step, then the run's status; with `calls`, each loop step's calls
    as the seed names them (what `forge status` adds)."""
    print_run(report, write, name)
    for step_id, step in report["steps"].items() if calls else ():
        if step.get("history"):
            write(f"{step_id}: {', '.join(step['history'])}")


def read_source(path: str) -> tuple[str, dict | None]:
    """The workflow file's text for `forge validate`, or ("", the report saying why it cannot be read)."""
    try:
        return Path(path).read_text(encoding="utf-8"), None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return "", Report(problems=[Problem("unreadable", f"cannot read {path}: {reason}")]).to_json()


def files_beside(path: Path, source: str, seen: set[Path]):
    """The sub-workflow files beside `path` (NAME.yaml) its steps name and nothing imported yet, one at a time: each
    is imported before the next is looked at, so one named twice is imported once. A first look only; saving
    validates for real."""
    report = validate_source(source)
    if not report.valid:
        return
    seen.add(path.resolve())
    for spec in report.workflow.steps:
        ref = spec.model.ref
        child = path.resolve().parent / f"{ref.name}.yaml" if ref else None
        if child and child.is_file() and child.resolve() not in seen:
            yield child
