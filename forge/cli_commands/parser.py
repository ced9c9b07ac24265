"""The `forge` command's arguments, without Django: the `forge` script reads them on a machine that only talks
to a server through its API."""

from __future__ import annotations

import argparse

from engine.interpreter import DECISIONS

OVERLAPS = ("skip", "queue_one", "cancel_running")  # forge.schedules.models.Schedule.OVERLAP_POLICIES
SESSION = ("login", "logout")
SCHEDULES = ("schedules", "schedule", "killswitch")
ACCOUNTS = ("lockouts", "unlock")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help="act as this user (local mode only; default: the installation's admin)")
    sub = parser.add_subparsers(dest="action", required=True)
    login = sub.add_parser("login", help="store a server and your token, so every command acts there as you")
    login.add_argument("url", metavar="URL")
    login.add_argument("--token-file", metavar="PATH", help="read the token from PATH (- for stdin) instead of "
                                                            "asking for it")
    sub.add_parser("logout", help="forget the stored server and token")
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
    _schedules(sub)
    _accounts(sub)
    for command in sub.choices.values():  # `forge reply 1 ask TEXT --user april` as well as before the command
        command.add_argument("--user", default=argparse.SUPPRESS, help="act as this user (local mode only)")


def _schedules(sub) -> None:
    listing = sub.add_parser("schedules", help="schedules: when each fires next, and what its last due time did")
    listing.add_argument("--json", action="store_true")
    schedule = sub.add_parser("schedule", help="add, pause, resume or delete a schedule")
    verbs = schedule.add_subparsers(dest="schedule_action", required=True)
    add = verbs.add_parser("add", help="start a saved workflow on a cron expression")
    add.add_argument("workflow", metavar="WORKFLOW")
    add.add_argument("--cron", required=True, metavar="EXPR", help="e.g. '0 9 * * 1-5' (09:00 on weekdays)")
    add.add_argument("--tz", default="UTC", help="the IANA time zone EXPR is read in (default UTC)")
    add.add_argument("--arg", action="append", default=[], metavar="K=V")
    add.add_argument("--overlap", choices=OVERLAPS, default="skip",
                     help="while a run it started is in flight: skip (default), queue_one or cancel_running")
    add.add_argument("--paused", action="store_true", help="add it paused (resume it later)")
    add.add_argument("--require-approval", action="store_true",
                     help="start each run held before its first step until an approver approves it")
    add.add_argument("--approver", action="append", default=[], metavar="GROUP",
                     help="a group whose members may approve its runs (repeatable; default Approvers; with "
                          "--require-approval)")
    add.add_argument("--json", action="store_true")
    for verb, what in (("pause", "stop a schedule firing"),
                       ("resume", "let a paused schedule fire again, from its next cron time"),
                       ("delete", "remove a schedule (the runs it started stay)")):
        parser = verbs.add_parser(verb, help=what)
        parser.add_argument("id", type=int, metavar="ID")
    switch = sub.add_parser("killswitch", help="show the kill switch, or engage (on) or lift (off) it")
    switch.add_argument("state", nargs="?", choices=("on", "off"))
    switch.add_argument("--reason", default="")


def _accounts(sub) -> None:
    listing = sub.add_parser("lockouts", help="failed logins still counted, and the lockouts they cause")
    listing.add_argument("--json", action="store_true")
    unlock = sub.add_parser("unlock", help="lift a login lockout: forget the failed logins of an account, an "
                                           "address, or an account from an address")
    unlock.add_argument("--account", metavar="NAME", help="the user name tried")
    unlock.add_argument("--address", metavar="IP", help="the address the logins came from")
