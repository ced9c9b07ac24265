"""`forge schedules`, `forge schedule add|pause|resume|delete` and `forge killswitch`: the parsers and
handlers the `forge` management command hooks in. They act as its --user (None: the system), through the
services; a refusal (ScheduleRejected, a ServiceError) is reported by the command and exits 2."""

from __future__ import annotations

import json

from engine.terminal import EXIT_OK, pairs
from forge.schedules import services
from forge.schedules.holds import approvers_words
from forge.schedules.models import Schedule
from forge.schedules.selectors import kill_switch, schedule_row, schedule_rows

COMMANDS = ("schedules", "schedule", "killswitch")


def add_parsers(sub) -> None:
    """Add the schedule commands to the `forge` command's subparsers."""
    listing = sub.add_parser("schedules", help="schedules: when each fires next, and what its last due time did")
    listing.add_argument("--json", action="store_true")
    schedule = sub.add_parser("schedule", help="add, pause, resume or delete a schedule")
    verbs = schedule.add_subparsers(dest="schedule_action", required=True)
    add = verbs.add_parser("add", help="start a saved workflow on a cron expression")
    add.add_argument("workflow", metavar="WORKFLOW")
    add.add_argument("--cron", required=True, metavar="EXPR", help="e.g. '0 9 * * 1-5' (09:00 on weekdays)")
    add.add_argument("--tz", default="UTC", help="the IANA time zone EXPR is read in (default UTC)")
    add.add_argument("--arg", action="append", default=[], metavar="K=V")
    add.add_argument("--overlap", choices=services.POLICIES, default=Schedule.SKIP,
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


def handle(command, options) -> int:
    """Carry out a schedule command for the `forge` management command `command` (its user and streams)."""
    action = options["action"]
    if action == "schedules":
        return _list(command, options)
    if action == "killswitch":
        return _kill_switch(command, options)
    if options["schedule_action"] == "add":
        return _add(command, options)
    schedule = _schedule(options["id"])
    verb = options["schedule_action"]
    if verb == "delete":
        services.schedule_delete(user=command.user, schedule=schedule)
        command.stdout.write(f"schedule {schedule.pk} deleted")
        return EXIT_OK
    changed = {"pause": services.schedule_pause, "resume": services.schedule_resume}[verb](
        user=command.user, schedule=schedule)
    command.stdout.write(f"schedule {changed.pk} {verb}d" + (f"; next fire {_when(changed.next_fire_at)}"
                                                              if changed.next_fire_at else ""))
    return EXIT_OK


def _schedule(pk: int) -> Schedule:
    schedule = Schedule.objects.filter(pk=pk).first()
    if schedule is None:
        raise services.ScheduleRejected(f"there is no schedule {pk}; `forge schedules` lists them")
    return schedule


def _when(value) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else "-"


def _approval(row: dict) -> str:
    """Whether a schedule's runs wait for approval, in words."""
    return f"approval by {approvers_words(row['approvers'])}" if row["require_approval"] else "no approval"


def _add(command, options) -> int:
    if options["approver"] and not options["require_approval"]:
        raise services.ScheduleRejected("--approver names who approves the runs of a schedule that requires "
                                        "approval: give --require-approval too")
    schedule = services.schedule_add(
        user=command.user, workflow=options["workflow"], cron=options["cron"], timezone=options["tz"],
        args=pairs(options["arg"], "--arg"), args_from_text=True, overlap=options["overlap"],
        enabled=not options["paused"], require_approval=options["require_approval"], approvers=options["approver"])
    if options["json"]:
        command.stdout.write(json.dumps(schedule_row(schedule), ensure_ascii=False))
    else:
        held = (f"; each run waits for approval by {approvers_words(schedule.approvers)} before its first step"
                if schedule.require_approval else "")
        command.stdout.write(f"schedule {schedule.pk} added: {schedule.workflow.name} at {schedule.cron} "
                             f"({schedule.timezone}); "
                             + (f"next fire {_when(schedule.next_fire_at)}" if schedule.enabled else "paused")
                             + held)
    return EXIT_OK


def _list(command, options) -> int:
    rows = schedule_rows()
    if options["json"]:
        command.stdout.write(json.dumps(rows, ensure_ascii=False))
        return EXIT_OK
    if not rows:
        command.stdout.write("no schedules")
    for row in rows:
        state = "enabled" if row["enabled"] else "paused"
        nxt = f"next {row['next_fire_at'][:16].replace('T', ' ')} UTC" if row["next_fire_at"] else "next -"
        last = (f"last {row['last_dispatch_status']} at {row['last_dispatch_at'][:16].replace('T', ' ')} UTC: "
                f"{row['last_dispatch_detail']}" if row["last_dispatch_status"] else "never fired")
        command.stdout.write(f"{row['id']:>4}  {row['workflow']:<24} {row['cron']:<16} {row['timezone']:<16} "
                             f"{state:<8} {row['overlap']:<14} {_approval(row):<24} {nxt}  {last}")
    return EXIT_OK


def _kill_switch(command, options) -> int:
    if options["state"] is not None:
        services.kill_switch_set(user=command.user, engaged=options["state"] == "on", reason=options["reason"])
    switch = kill_switch()
    by = f" by {switch.changed_by.get_username()}" if switch.changed_by else ""
    at = f" at {_when(switch.changed_at)}" if switch.changed_at else ""
    why = f": {switch.reason}" if switch.reason else ""
    if switch.engaged:
        command.stdout.write(f"kill switch engaged{by}{at}{why}; no schedule starts a run")
    else:
        command.stdout.write(f"kill switch off{f' (lifted{by}{at})' if switch.changed_at else ''}; "
                             f"schedules fire at their cron times")
    return EXIT_OK
