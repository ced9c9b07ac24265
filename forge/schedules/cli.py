"""`forge schedules`, `forge schedule add|pause|resume|delete` and `forge killswitch` in local mode: they act as
the command's --user (None: the installation's admin) through the services, and print the API's shapes
(ScheduleOut, KillSwitchOut) through forge/cli_commands/output.py, as the remote mode does. A refusal (a
ForgeError) is reported by the command, which exits with its code (forge.errors)."""

from __future__ import annotations

from engine.terminal import EXIT_OK, pairs
from forge.api.serializers_schedules import KillSwitchOut, ScheduleOut
from forge.cli_commands import output
from forge.cli_commands.parser import SCHEDULES as COMMANDS  # noqa: F401 (the command's dispatch reads it here)
from forge.schedules import services
from forge.schedules.models import Schedule
from forge.schedules.selectors import kill_switch, schedules_for_user


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
    command.stdout.write(output.schedule_changed(ScheduleOut(changed).data, verb))
    return EXIT_OK


def _schedule(pk: int) -> Schedule:
    schedule = Schedule.objects.filter(pk=pk).first()
    if schedule is None:
        raise services.ScheduleNotFound(f"there is no schedule {pk}; `forge schedules` lists them")
    return schedule


def _add(command, options) -> int:
    if options["approver"] and not options["require_approval"]:
        raise services.ScheduleRejected("--approver names who approves the runs of a schedule that requires "
                                        "approval: give --require-approval too")
    schedule = services.schedule_add(
        user=command.user, workflow=options["workflow"], cron=options["cron"], timezone=options["tz"],
        args=pairs(options["arg"], "--arg"), args_from_text=True, overlap=options["overlap"],
        enabled=not options["paused"], require_approval=options["require_approval"], approvers=options["approver"])
    row = ScheduleOut(schedule).data
    command.stdout.write(output.as_json(row) if options["json"] else output.schedule_added(row))
    return EXIT_OK


def _list(command, options) -> int:
    seen = Schedule.objects.all() if command.user is None else schedules_for_user(command.user)  # None: the admin
    rows = ScheduleOut(seen.select_related("workflow", "owner").order_by("id"), many=True).data
    if options["json"]:
        command.stdout.write(output.as_json(rows))
    else:
        output.print_schedules(rows, command.stdout.write)
    return EXIT_OK


def _kill_switch(command, options) -> int:
    if options["state"] is not None:
        services.kill_switch_set(user=command.user, engaged=options["state"] == "on", reason=options["reason"])
    command.stdout.write(output.kill_switch_words(KillSwitchOut(kill_switch()).data))
    return EXIT_OK
