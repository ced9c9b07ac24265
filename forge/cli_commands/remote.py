"""The `forge` commands through a server's API, as the person whose token is stored (docs/design/api.md, section
6). Nothing here needs Django set up: the `forge` script runs it on a machine that only talks to the server."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.interpreter import DECISIONS
from engine.model import ArgSpec
from engine.terminal import EXIT_FAILED, EXIT_INVALID, EXIT_OK, UsageError, pairs, print_problems
from engine.terminal import replies as reply_pairs, run_exit, unasked_note, unasked_replies
from engine.validation import validate_source
from engine.yamlload import YamlLoadError, load
from forge.cli_commands import output
from forge.cli_commands.parser import SCHEDULES
from forge.cli_commands.waiting import Exit, read_reply_text
from forge.cli_remote.client import Client
from forge.errors import Invalid, NotFound

Write = Callable[[str], object]


def typed_args(source: str, given: dict[str, str]) -> dict:
    """`--arg K=V` texts as the JSON values the workflow's `args` declare, as the local mode reads them; the
    server checks them again (an argument it cannot place is sent as given, for the server to refuse)."""
    try:
        value = load(source).value
        declared = {name: ArgSpec.model_validate(spec).model_copy(update={"required": False, "default": None})
                    for name, spec in ((value or {}).get("args") or {}).items()}
    except (YamlLoadError, ValueError, AttributeError, TypeError):
        return dict(given)
    try:
        return resolve_args(SimpleNamespace(args=declared), given, from_text=True)
    except ArgumentsInvalid as exc:
        raise Invalid(str(exc)) from None


class Remote:
    def __init__(self, client: Client, out: Write, err: Write):
        self.api, self.out, self.err = client, out, err

    def handle(self, options: dict) -> int:
        action = options["action"]
        if action in SCHEDULES:
            return self.schedules(options)
        if action in ("approve", "reject"):
            return self.decide(options, action)
        if action == "decide":
            return self.decide(options, options["decision"])
        return getattr(self, f"do_{action}")(options)

    def _json_or(self, options, value, lines: Callable[[], None]) -> None:
        if options.get("json"):
            self.out(output.as_json(value))
        else:
            lines()

    # -- runs ---------------------------------------------------------------------

    def do_run(self, options) -> int:
        replies = reply_pairs(options["reply"])
        target = options["target"]
        saved, source = self._version(target, options["json"])
        decisions = pairs(options["decide"], "--decide")
        bad = [f"{k}={v}" for k, v in decisions.items() if v not in DECISIONS]
        if bad:
            raise Invalid(f"--decide {bad[0]}: the decision must be one of {', '.join(DECISIONS)}")
        first_look = validate_source(source)
        for step in unasked_replies(first_look.workflow, replies) if replies and first_look.valid else ():
            self.err(f"forge: {unasked_note(step)}")
        checked = self.api.post("/workflows/validate", {"yaml": source})
        print_problems(target, output.report_of({"warnings": checked["warnings"]}), write=self.err)
        run = self.api.post("/runs", {"workflow": saved["workflow"], "version": saved["number"],
                                      "args": typed_args(source, pairs(options["arg"], "--arg"))})
        self.err(f"run {run['id']} of {saved['workflow']} v{saved['number']} started")
        if not options["wait"]:
            if options["json"]:
                self.out(output.as_json(output.started(run)))
            return EXIT_OK
        report = self._wait(run["id"], decisions, replies, options["timeout"])
        self._json_or(options, report, lambda: output.print_report(report, self.out, f"run {run['id']}"))
        return run_exit(report["status"])

    def _version(self, target: str, as_json: bool) -> tuple[dict, str]:
        """The version to start ({workflow, number}) and its YAML: a file saved first (with the sub-workflow files
        beside it), or a saved workflow's latest version."""
        path = Path(target)
        if path.is_file():
            return self._import(path, as_json, seen=set())
        try:
            workflow = self.api.get(f"/workflows/{target}")
        except NotFound:
            workflow = None
        number = latest_number(workflow)
        if number is None:
            self.err(f"forge: {target!r} is neither a file nor a saved workflow")
            raise Exit(EXIT_INVALID)
        return {"workflow": target, "number": number}, self.api.text(f"/workflows/{target}/versions/{number}/yaml")

    def _import(self, path: Path, as_json: bool, seen: set) -> tuple[dict, str]:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.err(f"forge: cannot read {path}: {exc}")
            raise Exit(EXIT_INVALID) from None
        for child in output.files_beside(path, source, seen):
            self._import(child, as_json, seen)
        try:
            return self.api.post("/workflows", {"yaml": source}), source
        except Invalid as exc:
            if "problems" not in exc.extra:
                raise
            output.print_rejected(str(path), exc.extra["problems"], as_json, self.out, self.err)
            raise Exit(EXIT_INVALID) from None

    def _wait(self, run: int, decisions: dict, replies: dict, timeout: float) -> dict:
        """Follow the run's events, answering its requests from --decide and --reply, until it ends or waits for a
        person; then its report. Each event wakes a fresh look. Whether it is paused is the report's (the server's
        own check, as the local mode's); it is read before the pending requests, as the local mode reads them: from
        a pause on only a person changes the requests, so those read next are the ones the run waits on."""
        deadline = time.monotonic() + timeout if timeout else None
        answered: set[int] = set()
        events = self.api.events(run, after=self.api.get(f"/runs/{run}")["last_event_id"],
                                 quiet_after=min(15.0, timeout) if timeout else 15.0)
        while True:
            report = self.api.get(f"/runs/{run}/report")
            if report["status"] in output.FINISHED:
                return report
            detail = self.api.get(f"/runs/{run}")
            acted = False
            for approval in (self.api.get(f"/approvals/{pk}") for pk in detail["approvals"] if pk not in answered):
                step = approval["step"]
                if approval["kind"] == "reply" and step in decisions:
                    raise UsageError(f"--decide {step}={decisions[step]}: step {step!r} asks for a reply, not a "
                                     f"decision; give --reply {step}=TEXT")
                if approval["kind"] == "reply" and replies.get(step):
                    self.api.post(f"/approvals/{approval['id']}/reply", {"text": replies[step].pop(0)})
                elif approval["kind"] != "reply" and step in decisions:
                    self.api.post(f"/approvals/{approval['id']}/decision", {"decision": decisions[step]})
                else:
                    continue
                answered.add(approval["id"])
                acted = True
            if report["status"] == output.PAUSED and not acted:
                return self.api.get(f"/runs/{run}/report")  # as it is now, as the local mode reads it
            if deadline is not None and time.monotonic() > deadline:
                self.err(f"forge: run {run} is still {detail['status']} after {timeout:g} s; "
                         "is the cluster running (bin/serve, or manage.py qcluster)?")
                raise Exit(EXIT_FAILED)
            next(events, None)  # the next event (or a quiet spell, or the stream's end) wakes a new look

    def do_status(self, options) -> int:
        report = self.api.get(f"/runs/{options['run']}/report")
        self._json_or(options, report,
                      lambda: output.print_report(report, self.out, f"run {options['run']}", calls=True))
        return EXIT_OK

    def do_cancel(self, options) -> int:
        run = self.api.post(f"/runs/{options['run']}/cancel", {"reason": options["reason"]})
        self.out(output.cancelled(run))
        return EXIT_OK

    def do_restart(self, options) -> int:
        plan = self.api.get(f"/runs/{options['run']}/restart-plan", step=options["step"])
        new = self.api.post(f"/runs/{options['run']}/restart", {"step": options["step"],
                                                                "plan": plan["fingerprint"]})
        row = output.restarted(new)
        self._json_or(options, row, lambda: output.print_restarted(row, self.out))
        return EXIT_OK

    # -- approvals ----------------------------------------------------------------

    def do_approvals(self, options) -> int:
        rows = output.approval_rows(self.api.every("/approvals"))
        self._json_or(options, rows, lambda: output.print_approvals(rows, self.out))
        return EXIT_OK

    def _pending(self, run: int, step: str) -> list[dict]:
        detail = self.api.get(f"/runs/{run}")
        found = [self.api.get(f"/approvals/{pk}") for pk in detail["approvals"]]
        return [a for a in found if a["step"] == step and a["status"] == "pending"]

    def decide(self, options, decision: str) -> int:
        run, step = options["run"], options["step"]
        pending = self._pending(run, step)
        if not pending:
            self.err(f"forge: step {step!r} of run {run} has no pending approval" if step else
                     f"forge: run {run} is not held before its start: name the step whose approval you decide")
            return EXIT_INVALID
        self.api.post(f"/approvals/{pending[0]['id']}/decision", {"decision": decision,
                                                                  "comment": options["comment"]})
        self.out(output.decided(pending[0], decision))
        return EXIT_OK

    def do_reply(self, options) -> int:
        text = read_reply_text(options)
        run, step, iteration = options["run"], options["step"], options["iteration"]
        pending = [a for a in self._pending(run, step) if a["kind"] == "reply"
                   and (iteration is None or a["iteration"] == iteration)]
        if not pending:
            after = f" after iteration {iteration}" if iteration is not None else ""
            self.err(f"forge: step {step!r} of run {run} has no pending reply request{after}")
            return EXIT_INVALID
        answered = self.api.post(f"/approvals/{pending[0]['id']}/reply", {"text": text})
        self.out(output.replied(answered, text))
        return EXIT_OK

    # -- workflows ----------------------------------------------------------------

    def do_validate(self, options) -> int:
        path = options["file"]
        source, found = output.read_source(path)
        if found:
            code = EXIT_INVALID
        else:
            found = self.api.post("/workflows/validate", {"yaml": source})
            code = EXIT_OK if found["valid"] else EXIT_FAILED
        self._json_or(options, found, lambda: output.print_validation(path, found, source, self.out))
        return code

    def do_workflows(self, options) -> int:
        rows = output.workflow_rows(self.api.every("/workflows"))
        self._json_or(options, rows, lambda: output.print_workflows(rows, self.out))
        return EXIT_OK

    # -- schedules ----------------------------------------------------------------

    def schedules(self, options) -> int:
        action = options["action"]
        if action == "schedules":
            rows = self.api.every("/schedules")
            self._json_or(options, rows, lambda: output.print_schedules(rows, self.out))
            return EXIT_OK
        if action == "killswitch":
            if options["state"] is not None:
                self.api.call("PUT", "/kill-switch", body={"engaged": options["state"] == "on",
                                                            "reason": options["reason"]})
            self.out(output.kill_switch_words(self.api.get("/kill-switch")))
            return EXIT_OK
        verb = options["schedule_action"]
        if verb == "add":
            return self._schedule_add(options)
        if verb == "delete":
            self.api.call("DELETE", f"/schedules/{options['id']}")
            self.out(f"schedule {options['id']} deleted")
            return EXIT_OK
        self.out(output.schedule_changed(self.api.post(f"/schedules/{options['id']}/{verb}"), verb))
        return EXIT_OK

    def _schedule_add(self, options) -> int:
        if options["approver"] and not options["require_approval"]:
            raise Invalid("--approver names who approves the runs of a schedule that requires approval: give "
                          "--require-approval too")
        given = pairs(options["arg"], "--arg")
        args = dict(given)
        if given:
            try:
                latest = latest_number(self.api.get(f"/workflows/{options['workflow']}"))
                if latest:
                    args = typed_args(self.api.text(f"/workflows/{options['workflow']}/versions/{latest}/yaml"),
                                      given)
            except NotFound:
                pass  # the server names what is missing when the schedule is added
        row = self.api.post("/schedules", {
            "workflow": options["workflow"], "cron": options["cron"], "timezone": options["tz"], "args": args,
            "overlap": options["overlap"], "enabled": not options["paused"],
            "require_approval": options["require_approval"], "approvers": options["approver"]})
        self.out(output.as_json(row) if options["json"] else output.schedule_added(row))
        return EXIT_OK


def latest_number(workflow: dict | None) -> int | None:
    """The number of a workflow's latest version, from GET /workflows/{name} (its `latest` version, or null)."""
    latest = (workflow or {}).get("latest")
    return latest["number"] if latest else None
