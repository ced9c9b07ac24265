"""The local runner: drives the interpreter in-process with the mock and shell agents.

Time is real, or virtual with `fast=True`: mock delays, backoff and timeouts
then advance a clock instead of sleeping, in order. Shell commands always
run for real; in virtual time they take no clock time.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.artifacts import Listing
from engine.executors import ShellExecutor, StepRequest, StepResult
from engine.executors import mock as mock_agent
from engine.executors.sandbox import Sandbox
from engine.interpreter import commands as cmd
from engine.interpreter import events as ev
from engine.interpreter import Interpreter, Options, RunState
from engine.interpreter import replay
from engine.interpreter.machine import RUN_TIMEOUT
from engine.problems import WorkflowInvalid
from engine.report import RunOutcome
from engine.validation import load_workflow
from engine.workflow import MAX_CHILD_DEPTH, Workflow


class DecisionMismatch(ValueError):
    """A `--decide` answer that does not fit the approval it was given for."""


class LocalRunner:
    """Runs one workflow to its end (or until it waits for a decision nobody gave).

    Args:
        workflow: the compiled workflow.
        args: run arguments, already resolved.
        decisions: step id -> approve/reject/retry/skip/abort, applied when
            that step's approval is requested.
        replies: step id -> answers to its reply gate, used in order (the lists are consumed).
        fast: virtual time.
        base_dir: where `workflow_ref: NAME` finds NAME.yaml.
        library: the step library for sub-workflows.
        options: interpreter options (concurrency, default timeout).
        on_command: called with every command (progress output).
        record: a list that receives every event and its commands (a replay log's entries).
        sandbox: where shell steps run (sandbox.py); on, without network, unless said otherwise.
        state: a prepared state (restart-from-step) instead of a new run's.
    """

    def __init__(self, workflow: Workflow, *, args: Mapping[str, Any] | None = None,
                 decisions: Mapping[str, str] | None = None, replies: dict[str, list[str]] | None = None,
                 fast: bool = False, base_dir: Path | None = None,
                 library: Mapping[str, Mapping] | None = None, options: Options | None = None,
                 on_command: Callable[[Any], None] | None = None, start_at: float | None = None,
                 workdir: str | None = None, depth: int = 0, record: list | None = None,
                 run_id: str | None = None, state: RunState | None = None, sandbox: Sandbox | None = None):
        self.workflow = workflow
        self.decisions = dict(decisions or {})
        self.replies = replies if replies is not None else {}
        self.fast = fast
        self.base_dir = base_dir or Path.cwd()
        self.library = library
        self.options = options or Options()
        self.on_command = on_command
        self.depth = depth
        self.record = record
        self.run_id = run_id or f"local-{uuid.uuid4().hex[:12]}"
        self.now = time.time() if start_at is None else start_at
        self.interpreter = Interpreter.new(workflow, run_id=self.run_id, args=dict(args or {}), options=self.options,
                                           state=state)
        self._heap: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()
        self._immediate: deque = deque()
        self._done: queue.Queue = queue.Queue()
        self._jobs: dict[tuple[str, int], threading.Event] = {}
        self._cancelled: set[tuple[str, int]] = set()
        self._own_workdir = workdir is None
        self.workdir = workdir
        self.sandbox = Sandbox() if sandbox is None else sandbox
        self._shell = ShellExecutor(sandbox=self.sandbox)
        self.artifacts = Listing()  # what shell steps' `artifacts` matched, for the report
        self._pool: ThreadPoolExecutor | None = None

    def run(self) -> RunOutcome:
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="forge-run-")
        try:
            self._feed(ev.RunStarted(at=self.now))
            while not self.interpreter.finished:
                if not self._next():
                    break
        finally:
            for cancel in self._jobs.values():
                cancel.set()
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        paused = not self.interpreter.finished
        return RunOutcome(self.workflow, self.interpreter.state, paused, self.now, artifacts=self.artifacts.steps)

    # -- the event loop ------------------------------------------------------

    def _stale(self, event: Any) -> bool:
        """A queued event the interpreter no longer waits for: a dropped timer, a cancelled attempt's result."""
        if isinstance(event, ev.TimerFired):
            return event.timer not in self.interpreter.state.timers
        if isinstance(event, ev.StepFinished):
            return (event.step, event.attempt) in self._cancelled
        return False

    def _waits_on_a_person(self, event: Any) -> bool:
        """A timer that only ends a wait for a person's decision or reply: its expiry, or the run's deadline."""
        timer = self.interpreter.state.timers.get(event.timer) if isinstance(event, ev.TimerFired) else None
        return timer is not None and timer["purpose"] in ("approval_timeout", RUN_TIMEOUT)

    def _next(self) -> bool:
        """Feed the next event; False when nothing more can happen."""
        while self._heap and self._stale(self._heap[0][2]):
            heapq.heappop(self._heap)  # never wait, in real time, for something nobody waits for
        if self._immediate:
            decision = self._immediate.popleft()
            # an earlier decision may have ended this approval (a halt expires pending approvals)
            if any(a["step"] == decision.step for a in self.interpreter.pending_approvals):
                self._feed(decision)
            return True
        if self.fast:
            if self._heap and self._heap[0][0] <= self.now:
                self._feed(heapq.heappop(self._heap)[2])
            elif self._jobs:
                self._finish_job(self._done.get())
            elif self._heap:
                at, _, event = heapq.heappop(self._heap)
                self.now = max(self.now, at)
                self._feed(event)
            else:
                return False
            return True
        if not self._jobs and all(self._waits_on_a_person(event) for _, _, event in self._heap):
            return False  # only a person could go on (spec 12: paused); in real time nobody waits for the expiry
        wait = max(0.0, self._heap[0][0] - time.time()) if self._heap else None
        if self._jobs:
            try:
                self._finish_job(self._done.get(timeout=wait))
                return True
            except queue.Empty:
                pass
        elif wait:
            time.sleep(wait)
        at, _, event = heapq.heappop(self._heap)
        self.now = max(time.time(), at)
        self._feed(event)
        return True

    def _push(self, at: float, event: Any) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), event))

    def _feed(self, event: Any) -> None:
        if not self.fast:
            self.now = max(self.now, time.time())
        commands = self.interpreter.advance(event)
        if self.record is not None:
            self.record.append(replay.entry(event, commands))
        for command in commands:
            if self.on_command is not None:
                self.on_command(command)
            handler = _APPLY.get(type(command))
            if handler is not None:
                handler(self, command)

    # -- carrying out commands ----------------------------------------------------

    def _dispatch(self, command: cmd.Dispatch) -> None:
        spec = self.workflow.by_id[command.step].model
        request = StepRequest.from_dispatch(command, spec, run_id=self.run_id, workdir=self.workdir)
        if command.agent == "mock":
            outcome = mock_agent.plan(request)
            if outcome.result is not None:
                at = self.now + outcome.delay_s
                self._push(at, outcome.result.event(request, at))
        elif command.agent == "shell":
            cancel = threading.Event()
            self._jobs[(command.step, command.attempt)] = cancel
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=max(1, self.options.max_concurrency),
                                                thread_name_prefix="forge-shell")
            self._pool.submit(self._run_shell, request, cancel)
        else:
            result = StepResult.failure(f"the local runner has no agent {command.agent!r}; it runs mock and shell")
            self._push(self.now, result.event(request, self.now))

    def _run_shell(self, request: StepRequest, cancel: threading.Event) -> None:
        try:
            result = self._shell.execute(request, cancel)
        except Exception as exc:  # an executor bug must end the step, not hang the run
            result = StepResult.failure(f"the shell agent failed: {exc}")
        self._done.put((request, result))

    def _finish_job(self, item: tuple[StepRequest, StepResult]) -> None:
        request, result = item
        self._jobs.pop((request.step, request.attempt), None)
        if request.spec.artifacts:  # what the attempt left, before the next step can change it
            self.artifacts.collect(self.workdir, request.step, request.attempt, request.spec.artifacts)
        if not self.fast:
            self.now = max(self.now, time.time())
        self._feed(result.event(request, self.now))

    def _request_approval(self, command: cmd.RequestApproval) -> None:
        if command.kind == "reply":
            self._reply(command)
            return
        decision = self.decisions.get(command.step)
        if decision is None:
            return
        if decision not in command.options:
            raise DecisionMismatch(f"--decide {command.step}={decision} does not answer the {command.kind} "
                                   f"requested for {command.step!r}; choose one of {', '.join(command.options)}")
        self._immediate.append(ev.ApprovalDecided(command.step, decision, by="local runner", at=self.now))

    def _reply(self, command: cmd.RequestApproval) -> None:
        answers = self.replies.get(command.step)
        if answers:
            self._immediate.append(ev.ReplyGiven(command.step, answers.pop(0), by="local runner", at=self.now))
        elif command.step in self.decisions:
            raise DecisionMismatch(f"--decide {command.step}={self.decisions[command.step]} does not answer the reply "
                                   f"requested for {command.step!r}; answer it with --reply {command.step}=TEXT")

    def _schedule(self, command: cmd.ScheduleTimer) -> None:
        self._push(command.fire_at, ev.TimerFired(command.timer, at=command.fire_at))

    def _cancel(self, command: cmd.CancelStep) -> None:
        self._cancelled.add((command.step, command.attempt))
        cancel = self._jobs.get((command.step, command.attempt))
        if cancel is not None:
            cancel.set()

    def _start_child(self, command: cmd.StartChild) -> None:
        def failed(message: str) -> None:
            self._push(self.now, ev.ChildFinished(command.step, command.attempt, "failed", error=message, at=self.now))

        if self.depth >= MAX_CHILD_DEPTH:
            failed(f"sub-workflows nest deeper than {MAX_CHILD_DEPTH} levels")
            return
        path = self.base_dir / f"{command.workflow}.yaml"
        try:
            child = load_workflow(path.read_bytes(), library=self.library)
            args = resolve_args(child.document, command.args)
        except OSError as exc:
            failed(f"cannot read {path}: {exc.strerror or exc}")
            return
        except (WorkflowInvalid, ArgumentsInvalid) as exc:
            failed(f"{command.workflow}: {exc}")
            return
        runner = LocalRunner(child, args=args, decisions=self.decisions, replies=self.replies, fast=self.fast, base_dir=self.base_dir,
                             library=self.library, options=self.options, start_at=self.now, workdir=self.workdir,
                             depth=self.depth + 1, sandbox=self.sandbox)
        outcome = runner.run()
        if outcome.paused:
            return  # the parent step stays in flight, so the whole run ends paused
        at = max(self.now, outcome.finished_at)
        self._push(at, ev.ChildFinished(command.step, command.attempt, outcome.state.status,
                                        outputs=dict(outcome.state.variables), error=outcome.state.error, at=at))


_APPLY = {
    cmd.Dispatch: LocalRunner._dispatch,
    cmd.RequestApproval: LocalRunner._request_approval,
    cmd.ScheduleTimer: LocalRunner._schedule,
    cmd.CancelStep: LocalRunner._cancel,
    cmd.StartChild: LocalRunner._start_child,
}


def log_command(command: Any) -> None:
    """Progress on stderr: one line per step change."""
    if isinstance(command, cmd.StepChanged):
        detail = f" ({command.wait})" if command.wait else ""
        if command.error:
            detail += f": {command.error}"
        print(f"  {command.step}: {command.status}{detail}", file=sys.stderr, flush=True)
