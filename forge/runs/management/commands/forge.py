"""`python manage.py forge ...` (and the `forge` console script): runs from the command line.

With --json a command prints exactly one JSON object on stdout. `run --wait`
exits like `python -m engine run`: 0 completed, 1 failed or cancelled,
3 paused (waiting for a decision or a reply), 2 invalid input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand

from engine.interpreter import DECISIONS
from engine.terminal import (
    EXIT_FAILED, EXIT_INVALID, EXIT_OK, EXIT_PAUSED, UsageError, pairs, print_problems, print_run, print_validation,
)
from engine.terminal import replies as reply_pairs, unasked_note, unasked_replies
from engine.problems import Problem, WorkflowInvalid
from engine.validation import Report, validate_source
from forge.accounts import cli as accounts_cli
from forge.runs import services
from forge.runs.compiled import new_run_workflow
from forge.runs.models import Approval, Run
from forge.runs.selectors import approvals_for_user, is_paused, run_report
from forge.schedules import cli as schedules_cli
from forge.workflows.models import Workflow
from forge.workflows.services import WorkflowRejected, workflow_validate, workflow_version_save



def shortened(text: str, limit: int = 200) -> str:
    """An iteration's output on one line, cut to `limit` characters."""
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Exit(Exception):
    def __init__(self, code: int):
        self.code = code


class Command(BaseCommand):
    help = "Run workflows on the cluster, decide approvals, cancel and restart runs."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="act as this user (default: the system itself)")
        sub = parser.add_subparsers(dest="action", required=True)
        run = sub.add_parser("run", help="start a run of a workflow file or of a saved workflow by name")
        run.add_argument("target", metavar="FILE_OR_NAME")
        run.add_argument("--arg", action="append", default=[], metavar="K=V")
        run.add_argument("--decide", action="append", default=[], metavar="STEP=DECISION",
                         help="answer STEP's approval when it is requested (with --wait)")
        run.add_argument("--reply", action="append", default=[], metavar="STEP=TEXT",
                         help="answer STEP's reply requests, in order (repeatable; with --wait)")
        run.add_argument("--wait", action="store_true", help="wait until the run ends or waits for a person")
        run.add_argument("--timeout", type=float, default=0, help="with --wait, give up after S seconds")
        run.add_argument("--json", action="store_true")
        status = sub.add_parser("status", help="a run's status and steps")
        status.add_argument("run", type=int)
        status.add_argument("--json", action="store_true")
        approvals = sub.add_parser("approvals", help="pending approvals (with --user, those that user may decide)")
        approvals.add_argument("--json", action="store_true")
        for verb in ("approve", "reject"):
            p = sub.add_parser(verb, help=f"{verb} a step's pending approval, or (no STEP) a held run's start")
            p.add_argument("run", type=int)
            p.add_argument("step", nargs="?", default="",
                           help="the step; none for the start of a run a schedule holds for approval")
            p.add_argument("--comment", default="")
        reply = sub.add_parser("reply", help="answer a loop step's pending reply request with free text")
        reply.add_argument("run", type=int)
        reply.add_argument("step")
        reply.add_argument("text", nargs="?", help="the reply (or give --file)")
        reply.add_argument("--file", metavar="PATH", help="read the reply from PATH (- for stdin)")
        reply.add_argument("--iteration", type=int, metavar="N",
                           help="the request that follows iteration N (default: the pending one)")
        decide = sub.add_parser("decide", help="answer an escalation: retry, skip or abort")
        decide.add_argument("run", type=int)
        decide.add_argument("step")
        decide.add_argument("decision", choices=DECISIONS)
        decide.add_argument("--comment", default="")
        cancel = sub.add_parser("cancel", help="cancel a run")
        cancel.add_argument("run", type=int)
        cancel.add_argument("--reason", default="")
        restart = sub.add_parser("restart", help="start a new run from a step of an ended run")
        restart.add_argument("run", type=int)
        restart.add_argument("--from", dest="step", required=True)
        restart.add_argument("--json", action="store_true")
        validate = sub.add_parser("validate", help="report every problem saving or running the file would meet")
        validate.add_argument("file")
        validate.add_argument("--json", action="store_true")
        workflows = sub.add_parser("workflows", help="saved workflows and their latest versions")
        workflows.add_argument("--json", action="store_true")
        schedules_cli.add_parsers(sub)
        accounts_cli.add_parsers(sub)
        for command in sub.choices.values():  # `forge reply 1 ask TEXT --user april` as well as before the command
            command.add_argument("--user", default=argparse.SUPPRESS, help="act as this user")

    def handle(self, *args, **options):
        try:
            self.user = self._user(options.get("user"))
            if options["action"] in schedules_cli.COMMANDS:
                code = schedules_cli.handle(self, options)
            elif options["action"] in accounts_cli.COMMANDS:
                code = accounts_cli.handle(self, options)
            else:
                code = getattr(self, f"do_{options['action']}")(options)
        except Exit as exc:
            code = exc.code
        except (services.ServiceError, PermissionDenied, WorkflowRejected, UsageError) as exc:
            self.stderr.write(f"forge: {exc}")
            code = EXIT_INVALID
        sys.stdout.flush()
        if code:
            sys.exit(code)

    # -- helpers ------------------------------------------------------------------

    def _user(self, name: str | None):
        if not name:
            return None
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise UsageError(f"--user: there is no user {name!r}")
        return user

    def _json(self, value) -> None:
        self.stdout.write(json.dumps(value, ensure_ascii=False, default=str))

    def _run(self, run_id: int) -> Run:
        run = Run.objects.filter(pk=run_id).select_related("workflow", "version").first()
        if run is None:
            self.stderr.write(f"forge: there is no run {run_id}")
            raise Exit(EXIT_INVALID)
        return run

    # -- commands -----------------------------------------------------------------

    def do_run(self, options) -> int:
        replies = reply_pairs(options["reply"])  # a bad --reply saves nothing
        version = self._version(options["target"], options["json"])
        decisions = pairs(options["decide"], "--decide")
        bad = [f"{k}={v}" for k, v in decisions.items() if v not in DECISIONS]
        if bad:
            raise services.ServiceError(f"--decide {bad[0]}: the decision must be one of {', '.join(DECISIONS)}")
        for step in unasked_replies(new_run_workflow(version)[0], replies) if replies else ():
            self.stderr.write(f"forge: {unasked_note(step)}")  # as the local runner: ignored
        self._warn(options["target"], version)
        run = services.run_start(user=self.user, version=version, args=pairs(options["arg"], "--arg"),
                                 args_from_text=True)
        self.stderr.write(f"run {run.pk} of {version} started")
        if not options["wait"]:
            if options["json"]:
                self._json({"run": run.pk, "status": run.status})
            return EXIT_OK
        run = self._wait(run, decisions, replies, options["timeout"])
        result = run_report(run)
        if options["json"]:
            self._json(result)
        else:
            print_run(result, self.stdout.write, f"run {run.pk}")
        return {"completed": EXIT_OK, "paused": EXIT_PAUSED}.get(result["status"], EXIT_FAILED)

    def _warn(self, target: str, version) -> None:
        """The version's validation warnings (unknown_name, ...) on stderr, as `python -m engine run` prints them:
        the run goes on."""
        try:
            warnings = new_run_workflow(version)[0].warnings
        except WorkflowInvalid:
            return  # starting it says why
        print_problems(target, Report(warnings=warnings), write=self.stderr.write)

    def _version(self, target: str, as_json: bool):
        path = Path(target)
        if path.is_file():
            return self._import(path, as_json, seen=set())
        workflow = Workflow.objects.filter(name=target).first()
        version = workflow.latest_version() if workflow else None
        if version is None:
            self.stderr.write(f"forge: {target!r} is neither a file nor a saved workflow")
            raise Exit(EXIT_INVALID)
        return version

    def _import(self, path: Path, as_json: bool, seen: set):
        """Save the file as a workflow version, and the NAME.yaml files its sub-workflow steps name."""
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.stderr.write(f"forge: cannot read {path}: {exc}")
            raise Exit(EXIT_INVALID) from None
        # A first look, only to find the sub-workflow files beside this one; saving validates for real.
        report = validate_source(source)
        if report.valid:
            seen.add(path.resolve())
            for spec in report.workflow.steps:
                ref = spec.model.ref
                child = path.resolve().parent / f"{ref.name}.yaml" if ref else None
                if child and child.is_file() and child.resolve() not in seen:
                    self._import(child, as_json, seen)
        try:
            return workflow_version_save(user=self.user, source=source)
        except WorkflowRejected as exc:
            rejected = Report(problems=exc.problems)
            if as_json:
                self._json(rejected.to_json())
            print_problems(str(path), rejected, write=self.stderr.write)
            raise Exit(EXIT_INVALID) from None

    def _wait(self, run: Run, decisions: dict[str, str], replies: dict[str, list[str]], timeout: float) -> Run:
        deadline = time.monotonic() + timeout if timeout else None
        answered: set[int] = set()
        pause = 0.02

        def answerable(approval: Approval) -> bool:
            if approval.kind == Approval.REPLY:
                return bool(replies.get(approval.step))
            return approval.step in decisions

        while True:
            run.refresh_from_db()
            if run.finished:
                return run
            # Paused is read first: from then on only a person changes the pending requests read next, so the
            # requests checked below are the ones the run waits on (read in the other order, a request that came
            # between the two reads ended the wait as paused without being checked).
            paused, acted = is_paused(run), False
            for approval in Approval.objects.filter(run=run, status=Approval.PENDING).exclude(pk__in=answered):
                if approval.kind == Approval.REPLY and approval.step in decisions:
                    # As the local runner: a decision does not answer a reply request.
                    raise UsageError(f"--decide {approval.step}={decisions[approval.step]}: step "
                                     f"{approval.step!r} asks for a reply, not a decision; give --reply "
                                     f"{approval.step}=TEXT")
                if not answerable(approval):
                    continue
                answered.add(approval.pk)
                acted = True
                if approval.kind == Approval.REPLY:
                    services.reply_give(user=self.user, approval=approval, text=replies[approval.step].pop(0))
                else:
                    services.approval_decide(user=self.user, approval=approval, decision=decisions[approval.step])
            if paused and not acted:
                return run
            if deadline is not None and time.monotonic() > deadline:
                self.stderr.write(f"forge: run {run.pk} is still {run.status} after {timeout:g} s; "
                                  "is the cluster running (bin/serve, or manage.py qcluster)?")
                raise Exit(EXIT_FAILED)
            time.sleep(pause)
            pause = min(pause * 1.5, 0.25)

    def do_status(self, options) -> int:
        run = self._run(options["run"])
        result = run_report(run)
        if options["json"]:
            self._json(result)
        else:
            print_run(result, self.stdout.write, f"run {run.pk}")
            for step_id, step in result["steps"].items():
                if step.get("history"):  # a loop step's calls, as the seed names them
                    self.stdout.write(f"{step_id}: {', '.join(step['history'])}")
        return EXIT_OK

    def do_approvals(self, options) -> int:
        pending = approvals_for_user(self.user)
        rows = []
        for a in pending:
            row = {"run": a.run_id, "workflow": a.run.workflow.name, "step": a.step, "kind": a.kind,
                   "options": a.options, "message": a.message, "requested_at": a.requested_at.isoformat(),
                   "expires_at": a.expires_at.isoformat() if a.expires_at else None}
            if a.kind == Approval.REPLY:
                row.update(iteration=a.iteration, output=shortened(a.output))
            rows.append(row)
        if options["json"]:
            self._json(rows)
        elif not rows:
            self.stdout.write("no pending approvals")
        for row in [] if options["json"] else rows:
            if row["kind"] == Approval.REPLY:
                self.stdout.write(f"run {row['run']} {row['workflow']} / {row['step']} (reply, iteration "
                                  f"{row['iteration']}): {row['message']}  [forge reply {row['run']} {row['step']} "
                                  f"TEXT]")
                if row["output"]:
                    self.stdout.write(f"    output: {row['output']}")
                continue
            if row["kind"] == Approval.START:  # a held run's start names no step: `forge approve RUN`
                self.stdout.write(f"run {row['run']} {row['workflow']} (start): {row['message']}  "
                                  f"[forge approve|reject {row['run']}]")
                continue
            self.stdout.write(f"run {row['run']} {row['workflow']} / {row['step']} ({row['kind']}): "
                              f"{row['message']}  [{'|'.join(row['options'])}]")
        return EXIT_OK

    def do_reply(self, options) -> int:
        text = self._reply_text(options)
        run = self._run(options["run"])
        step, iteration = options["step"], options["iteration"]
        requests = Approval.objects.filter(run=run, step=step, kind=Approval.REPLY)
        if iteration is not None:
            approval = requests.filter(iteration=iteration).order_by("-id").first()
            if approval is None:
                self.stderr.write(f"forge: step {step!r} of run {run.pk} asked for no reply after iteration "
                                  f"{iteration}")
                return EXIT_INVALID
        else:
            approval = requests.filter(status=Approval.PENDING).first()
            if approval is None:
                self.stderr.write(f"forge: {self._no_pending_reply(run, step, requests)}")
                return EXIT_INVALID
        approval = services.reply_give(user=self.user, approval=approval, text=text)
        self.stdout.write(f"run {run.pk} / {step}: replied to iteration {approval.iteration} "
                          f"({len(text.encode('utf-8'))} bytes)")
        return EXIT_OK

    def _reply_text(self, options) -> str:
        text, path = options["text"], options["file"]
        if (text is None) == (path is None):
            raise UsageError("give the reply as TEXT or with --file PATH (- for stdin), not both")
        if path is None:
            return text
        try:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
            return data.decode("utf-8")
        except OSError as exc:
            raise UsageError(f"--file: cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--file: {path} is not UTF-8 text") from None

    def _no_pending_reply(self, run: Run, step: str, requests) -> str:
        last = requests.order_by("-id").first()
        if last is not None:
            return (f"step {step!r} of run {run.pk} has no pending reply request: the one after iteration "
                    f"{last.iteration} was already {last.status}")
        other = Approval.objects.filter(run=run, step=step, status=Approval.PENDING).first()
        if other is not None:
            return (f"step {step!r} of run {run.pk} waits for a decision ({other.kind}), not a reply: answer it "
                    f"with forge approve, reject or decide")
        return f"step {step!r} of run {run.pk} has no pending reply request"

    def _decide(self, options, decision: str) -> int:
        run = self._run(options["run"])
        approval = Approval.objects.filter(run=run, step=options["step"], status=Approval.PENDING).first()
        if approval is None:
            self.stderr.write(f"forge: step {options['step']!r} of run {run.pk} has no pending approval"
                              if options["step"] else f"forge: run {run.pk} is not held before its start: name "
                                                      f"the step whose approval you decide")
            return EXIT_INVALID
        services.approval_decide(user=self.user, approval=approval, decision=decision, comment=options["comment"])
        self.stdout.write(f"run {run.pk} / {approval.step or 'start'}: {decision}")
        return EXIT_OK

    def do_approve(self, options) -> int:
        return self._decide(options, "approve")

    def do_reject(self, options) -> int:
        return self._decide(options, "reject")

    def do_decide(self, options) -> int:
        return self._decide(options, options["decision"])

    def do_cancel(self, options) -> int:
        run = services.run_cancel(user=self.user, run=self._run(options["run"]), reason=options["reason"])
        self.stdout.write(f"run {run.pk}: cancel requested")
        return EXIT_OK

    def do_restart(self, options) -> int:
        new = services.run_restart(user=self.user, run=self._run(options["run"]), step=options["step"])
        if options["json"]:
            self._json({"run": new.pk, "restarted_from": options["run"], "step": options["step"]})
        else:
            self.stdout.write(f"run {new.pk} started from step {options['step']} of run {options['run']}")
        return EXIT_OK

    def do_validate(self, options) -> int:
        """Exits like `python -m engine validate` (0 valid, 1 invalid, 2 unreadable), but judges as saving does."""
        path = options["file"]
        try:
            report = workflow_validate(source=Path(path).read_text(encoding="utf-8"))
            code = EXIT_OK if report.valid else EXIT_FAILED
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            report, code = Report(problems=[Problem("unreadable", f"cannot read {path}: {reason}")]), EXIT_INVALID
        if options["json"]:
            self._json(report.to_json())
        else:
            print_validation(path, report, self.stdout.write)
        return code

    def do_workflows(self, options) -> int:
        rows = []
        for workflow in Workflow.objects.all():
            latest = workflow.latest_version()
            rows.append({"name": workflow.name, "versions": workflow.versions.count(),
                         "latest": latest.number if latest else None, "description": workflow.description,
                         "runs": workflow.runs.count()})
        if options["json"]:
            self._json(rows)
        for row in [] if options["json"] else rows:
            self.stdout.write(f"{row['name']:<32} v{row['latest']}  {row['runs']} run(s)  {row['description']}")
        return EXIT_OK

