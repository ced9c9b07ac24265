"""The `forge` commands run on the server itself, as its --user or (without) as the installation's admin: the
same selectors and services the API's views call, serialized with the views' own Output classes, printed through
output.py as the remote mode prints the API's answers."""

from __future__ import annotations

import time
from pathlib import Path

from django.db.models import Count, Max

from engine.interpreter import DECISIONS
from engine.problems import WorkflowInvalid
from engine.terminal import EXIT_FAILED, EXIT_INVALID, EXIT_OK, UsageError, pairs, print_problems
from engine.terminal import replies as reply_pairs, run_exit, unasked_note, unasked_replies
from engine.validation import Report
from forge.api.serializers_runs import ApprovalOut, RunOut
from forge.api.views.workflows import WorkflowOut
from forge.cli_commands import output
from forge.cli_commands.waiting import Exit, read_reply_text
from forge.runs import services
from forge.runs.compiled import new_run_workflow
from forge.runs.models import Approval, Run
from forge.runs.reads.report import shown_report
from forge.runs.selectors import approvals_for_user, is_paused
from forge.workflows.models import Workflow
from forge.workflows.selectors import workflows_for_user
from forge.workflows.services import WorkflowRejected, workflow_validate, workflow_version_save


def fresh(run: Run) -> Run:
    return Run.objects.select_related("workflow", "version", "started_by").get(pk=run.pk)


class Local:
    """The commands, acting as `user` (None: the installation's admin), writing to the command's streams."""

    def __init__(self, user, stdout, stderr, *, paused=is_paused):
        self.user, self.stdout, self.stderr = user, stdout, stderr
        self.is_paused = paused

    def _run(self, run_id: int) -> Run:
        run = Run.objects.filter(pk=run_id).select_related("workflow", "version").first()
        if run is None:
            self.stderr.write(f"forge: There is no run {run_id}.")  # the API's sentence
            raise Exit(EXIT_INVALID)
        return run

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
                self.stdout.write(output.as_json(output.started(RunOut(fresh(run)).data)))
            return EXIT_OK
        run = self._wait(run, decisions, replies, options["timeout"])
        result = shown_report(run)
        if options["json"]:
            self.stdout.write(output.as_json(result))
        else:
            output.print_report(result, self.stdout.write, f"run {run.pk}")
        return run_exit(result["status"])

    def _warn(self, target: str, version) -> None:
        """The version's validation warnings on stderr, as `python -m engine run` prints them: the run goes on."""
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
        for child in output.files_beside(path, source, seen):
            self._import(child, as_json, seen)
        try:
            return workflow_version_save(user=self.user, source=source)
        except WorkflowRejected as exc:
            output.print_rejected(str(path), [p.to_json() for p in exc.problems], as_json, self.stdout.write,
                                  self.stderr.write)
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
            paused, acted = self.is_paused(run), False
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
        result = shown_report(run)
        if options["json"]:
            self.stdout.write(output.as_json(result))
        else:
            output.print_report(result, self.stdout.write, f"run {run.pk}", calls=True)
        return EXIT_OK

    def do_approvals(self, options) -> int:
        pending = approvals_for_user(self.user)
        rows = output.approval_rows(ApprovalOut(pending, many=True).data)
        if options["json"]:
            self.stdout.write(output.as_json(rows))
        else:
            output.print_approvals(rows, self.stdout.write)
        return EXIT_OK

    def do_reply(self, options) -> int:
        text = read_reply_text(options)
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
        self.stdout.write(output.replied({"run": run.pk, "step": step, "iteration": approval.iteration}, text))
        return EXIT_OK

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

    def decide(self, options, decision: str) -> int:
        run = self._run(options["run"])
        approval = Approval.objects.filter(run=run, step=options["step"], status=Approval.PENDING).first()
        if approval is None:
            self.stderr.write(f"forge: step {options['step']!r} of run {run.pk} has no pending approval"
                              if options["step"] else f"forge: run {run.pk} is not held before its start: name "
                                                      f"the step whose approval you decide")
            return EXIT_INVALID
        services.approval_decide(user=self.user, approval=approval, decision=decision, comment=options["comment"])
        self.stdout.write(output.decided({"run": run.pk, "step": approval.step}, decision))
        return EXIT_OK

    def do_cancel(self, options) -> int:
        run = services.run_cancel(user=self.user, run=self._run(options["run"]), reason=options["reason"])
        self.stdout.write(output.cancelled({"id": run.pk}))
        return EXIT_OK

    def do_restart(self, options) -> int:
        new = services.run_restart(user=self.user, run=self._run(options["run"]), step=options["step"])
        row = output.restarted(RunOut(fresh(new)).data)
        if options["json"]:
            self.stdout.write(output.as_json(row))
        else:
            output.print_restarted(row, self.stdout.write)
        return EXIT_OK

    def do_validate(self, options) -> int:
        """Exits like `python -m engine validate` (0 valid, 1 invalid, 2 unreadable), but judges as saving does."""
        path = options["file"]
        source, unreadable = output.read_source(path)
        if unreadable:
            return self._validated(options, path, unreadable, "", EXIT_INVALID)
        found = workflow_validate(source=source).to_json()
        return self._validated(options, path, found, source, EXIT_OK if found["valid"] else EXIT_FAILED)

    def _validated(self, options, path: str, found: dict, source: str, code: int) -> int:
        if options["json"]:
            self.stdout.write(output.as_json(found))
        else:
            output.print_validation(path, found, source, self.stdout.write)
        return code

    def do_workflows(self, options) -> int:
        seen = Workflow.objects.all() if self.user is None else workflows_for_user(self.user)  # None: the admin
        listed = (seen.annotate(latest_version=Max("versions__number"),
                                                          version_count=Count("versions")).order_by("name"))
        rows = output.workflow_rows(WorkflowOut(listed, many=True).data)
        if options["json"]:
            self.stdout.write(output.as_json(rows))
        else:
            output.print_workflows(rows, self.stdout.write)
        return EXIT_OK
