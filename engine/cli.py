"""`python -m engine validate|plan|run`: the local runner's command line (spec section 12).

With --json each command prints exactly one JSON object on stdout; progress
and logs go to stderr.
Exit codes: validate 0 valid, 1 invalid, 2 unreadable; plan 0, or 2 when the
file is unreadable or invalid; run 0 completed, 1 failed or cancelled,
3 paused, 2 invalid input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.arguments import ArgumentsInvalid, resolve_args
from engine.executors.sandbox import sandbox_from_environ
from engine.interpreter import DECISIONS, Options
from engine.problems import Problem, WorkflowInvalid
from engine.report import report
from engine.runner import DecisionMismatch, LocalRunner, log_command
from engine.validation import Report, load_workflow, validate_source
from engine.terminal import (
    EXIT_FAILED, EXIT_INVALID, EXIT_OK, UsageError, pairs, print_problems, print_run, print_validation,
    replies, run_exit, unasked_note, unasked_replies,
)
from engine.yamlload import YamlLoadError, load

class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="Validate, plan and run .lobsterX workflows locally.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    validate = commands.add_parser("validate", help="report every problem of a workflow file")
    plan = commands.add_parser("plan", help="print the execution layers")
    run = commands.add_parser("run", help="run a workflow in-process with the mock and shell agents")
    for sub in (validate, plan, run):
        sub.add_argument("file", help="the .lobsterX YAML file")
        sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.add_argument("--library", metavar="FILE", help="step library: a YAML mapping of names to step fields")
    run.add_argument("--arg", action="append", default=[], metavar="K=V", help="a run argument")
    run.add_argument("--decide", action="append", default=[], metavar="STEP=DECISION",
                     help="answer STEP's approval: approve, reject, retry, skip or abort")
    run.add_argument("--reply", action="append", default=[], metavar="STEP=TEXT",
                     help="answer STEP's reply gate; repeat for each iteration, in order")
    run.add_argument("--fast", action="store_true", help="virtual time: delays, backoff and timeouts do not sleep")
    run.add_argument("--concurrency", type=int, default=16, metavar="N", help="steps in flight at once (default 16)")
    run.add_argument("--timeout", type=float, default=3600.0, metavar="S", help="default step timeout in seconds")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--shell-network", action="store_true",
                     help="let shell steps reach the network (their sandbox has none otherwise)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    as_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
        return _COMMANDS[args.command](args)
    except UsageError as exc:
        _usage_error(str(exc), as_json)
        return EXIT_INVALID


def _usage_error(message: str, as_json: bool) -> None:
    if as_json:
        _print_json({"error": message})
    print(f"python -m engine: {message}", file=sys.stderr)


def _read(path: str) -> bytes | Problem:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Problem("unreadable", f"cannot read {path}: {reason}")


def _load_library(path: str | None) -> Mapping[str, Mapping] | None:
    if path is None:
        return None
    data = _read(path)
    if isinstance(data, Problem):
        raise UsageError(data.message)
    try:
        library = load(data).value
    except YamlLoadError as exc:
        raise UsageError(f"--library {path}: {exc.problem.message}") from None
    bad = [name for name, entry in library.items() if not isinstance(entry, dict)]
    if bad:
        raise UsageError(f"--library {path}: entry {bad[0]!r} must be a mapping of step fields")
    return library


def _validate(path: str, library) -> tuple[Report, int]:
    data = _read(path)
    if isinstance(data, Problem):
        return Report(problems=[data]), EXIT_INVALID
    report_ = validate_source(data, library=library)
    return report_, (EXIT_OK if report_.valid else EXIT_FAILED)


def cmd_validate(args) -> int:
    report_, code = _validate(args.file, _load_library(args.library))
    if args.json:
        _print_json(report_.to_json())
    else:
        print_validation(args.file, report_)
    return code


def cmd_plan(args) -> int:
    report_, _ = _validate(args.file, _load_library(args.library))
    if not report_.valid:
        _print_invalid(args, report_)
        return EXIT_INVALID
    layers = report_.workflow.layers()
    print_problems(args.file, Report(warnings=report_.warnings), lambda line: print(line, file=sys.stderr))
    if args.json:
        _print_json({"layers": layers})
    else:
        for number, layer in enumerate(layers, 1):
            print(f"layer {number}: {', '.join(layer)}")
    return EXIT_OK


def cmd_run(args) -> int:
    library = _load_library(args.library)
    report_, _ = _validate(args.file, library)
    if not report_.valid:
        _print_invalid(args, report_)
        return EXIT_INVALID
    workflow = report_.workflow
    print_problems(args.file, Report(warnings=report_.warnings), lambda line: print(line, file=sys.stderr))
    if workflow.unresolved_library:
        raise UsageError(f"step(s) {', '.join(workflow.unresolved_library)} use library_step; give --library FILE")
    if args.concurrency < 1 or not (0 < args.timeout < math.inf):
        raise UsageError("--concurrency must be at least 1 and --timeout a positive number of seconds")
    raw_args = pairs(args.arg, "--arg")
    decisions = pairs(args.decide, "--decide")
    for step, decision in decisions.items():
        if step not in workflow.by_id:  # spec 13: a decision for an approval never requested is ignored
            print(f"python -m engine: note: --decide {step}={decision} is ignored: the workflow has no step "
                  f"{step!r}", file=sys.stderr)
        if decision not in DECISIONS:
            raise UsageError(f"--decide {step}={decision}: the decision must be one of {', '.join(DECISIONS)}")
    answers = replies(args.reply)
    for step in unasked_replies(workflow, answers):
        print(f"python -m engine: {unasked_note(step)}", file=sys.stderr)
    try:
        run_args = resolve_args(workflow.document, raw_args, from_text=True)
    except ArgumentsInvalid as exc:
        raise UsageError(str(exc)) from None
    problem = _check_workflow_refs(Path(args.file), workflow, library)
    if problem is not None:
        if args.json:
            _print_json(Report(problems=[problem]).to_json())
        else:
            print(f"{args.file}: {problem.code}: {problem.message}", file=sys.stderr)
        return EXIT_INVALID
    options = Options(max_concurrency=args.concurrency, default_timeout_s=args.timeout)
    try:
        sandbox = sandbox_from_environ(network=args.shell_network)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    runner = LocalRunner(workflow, args=run_args, decisions=decisions, replies=answers, fast=args.fast,
                         base_dir=Path(args.file).resolve().parent, library=library, options=options,
                         on_command=None if args.quiet else log_command, sandbox=sandbox)
    try:
        outcome = runner.run()
    except DecisionMismatch as exc:
        raise UsageError(str(exc)) from None
    result = report(outcome)
    if args.json:
        _print_json(result)
    else:
        print_run(result)
        for approval in runner.interpreter.pending_approvals:
            if approval["kind"] == "reply":
                print(f"waiting for a reply on {approval['step']}: {approval['message']}\n"
                      f"  answer with --reply {approval['step']}=TEXT")
                continue
            print(f"waiting for a decision on {approval['step']} ({approval['kind']}): {approval['message']}\n"
                  f"  answer with --decide {approval['step']}={'|'.join(approval['options'])}")
    return run_exit(outcome.status)


def _check_workflow_refs(path: Path, workflow, library) -> Problem | None:
    """Sub-workflows resolve as NAME.yaml beside the file; a cycle of references is an error."""
    base = path.resolve().parent
    loaded = {workflow.name: workflow}
    trail: list[str] = []

    def visit(wf) -> Problem | None:
        trail.append(wf.name)
        for spec in wf.steps:
            ref = spec.model.ref
            if ref is None:
                continue
            if ref.name in trail:
                cycle = trail[trail.index(ref.name):] + [ref.name]
                return Problem("cycle", "workflow reference cycle: " + " -> ".join(cycle), spec.id)
            if ref.name not in loaded:
                try:
                    loaded[ref.name] = load_workflow((base / f"{ref.name}.yaml").read_bytes(), library=library)
                except OSError:
                    return Problem("unknown_reference", f"sub-workflow {ref.name!r} not found "
                                   f"(looked for {ref.name}.yaml beside {path.name})", spec.id)
                except WorkflowInvalid as exc:
                    return Problem("unknown_reference", f"sub-workflow {ref.name!r} is invalid: {exc}", spec.id)
            found = visit(loaded[ref.name])
            if found is not None:
                return found
        trail.pop()
        return None

    return visit(workflow)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _print_invalid(args, report_: Report) -> None:
    if args.json:
        _print_json(report_.to_json())
    else:
        print_problems(args.file, report_)


_COMMANDS = {"validate": cmd_validate, "plan": cmd_plan, "run": cmd_run}
