"""Every refusal is a ForgeError of its kind: the one table (forge/errors.py) gives its HTTP status and CLI exit
code, the console's 403 page still answers a service's Forbidden, and the `forge` command exits by the table."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.urls import reverse

from engine.problems import Problem
from forge.accounts.services import LockoutNotFound, LockoutRejected, lockout_lift
from forge.console.run_form import RunFormRefused
from forge.console.views.editor_api import refused
from forge.console.views.editor_pages import Refused, RefusedInvalid, RefusedMissing, RefusedTooLarge
from forge.errors import Conflict, ForgeError, Forbidden, Invalid, NotFound, Stale, exit_code_of, kind_of, problem_of
from forge.runs.creation import RunRefused, RunTooLarge
from forge.runs.services import ServiceConflict, ServiceError, ServiceTooLarge
from forge.schedules import services as schedules
from forge.schedules.services import ScheduleConflict, ScheduleNotFound, ScheduleRejected, ScheduleTooLarge
from forge.workflows.editing import (EditConflict, EditInvalid, EditNotFound, EditRefused, EditStale, EditTooLarge,
                                     SaveConflict)
from forge.workflows.layouts import LayoutRejected
from forge.workflows.placements import PlacementInvalid, PlacementRefused
from forge.workflows.services import WorkflowConflict, WorkflowRejected

MERGE = {"theirs_version": 3}
NIGHTLY = """
name: nightly
steps:
  - id: build
    agent: mock
    command: build
    mock: {outputs: {done: true}}
"""


@pytest.fixture
def nightly(save_workflow):
    return save_workflow(NIGHTLY).workflow


@pytest.mark.parametrize("exc,family,slug,status,exit_code", [
    (ServiceError("a reply needs some text"), ServiceError, "invalid", 422, 2),
    (ServiceConflict("run 4 has already ended (completed)"), ServiceError, "conflict", 409, 2),
    (ServiceTooLarge("the run's arguments are 9 bytes"), ServiceError, "too-large", 413, 2),
    (RunRefused("workflow references form a cycle: a -> a"), RunRefused, "invalid", 422, 2),
    (RunTooLarge("the run's arguments are 9 bytes"), RunRefused, "too-large", 413, 2),
    (ScheduleRejected("overlap 'x'", field="overlap"), ServiceError, "invalid", 422, 2),
    (ScheduleConflict("schedule 1 is already paused"), ScheduleRejected, "conflict", 409, 2),
    (ScheduleNotFound("there is no schedule 9"), ScheduleRejected, "not-found", 404, 2),
    (ScheduleTooLarge("arguments for v1: too big", field="args"), ScheduleRejected, "too-large", 413, 2),
    (WorkflowRejected([Problem("bad", "no steps")]), WorkflowRejected, "invalid", 422, 2),
    (WorkflowConflict([Problem("conflict", "changed")]), WorkflowRejected, "conflict", 409, 2),
    (EditRefused("the body is a JSON object", code="bad_request"), EditRefused, "bad-request", 400, 2),
    (EditInvalid("its name stays", code="name_changed"), EditRefused, "invalid", 422, 2),
    (EditNotFound("you have no draft with this id", code="not_found"), EditRefused, "not-found", 404, 2),
    (EditConflict("a workflow named 'x' exists", code="name_taken"), EditRefused, "conflict", 409, 2),
    (EditStale("revision 1 is not newer", code="stale_revision"), EditRefused, "stale", 409, 2),
    (EditTooLarge("the text is 2 bytes", code="too_large"), EditRefused, "too-large", 413, 2),
    (SaveConflict(MERGE), EditStale, "stale", 409, 2),
    (PlacementRefused("'X' is not a step id", code="bad_id"), PlacementRefused, "bad-request", 400, 2),
    (PlacementInvalid("the draft has no step 'x'", code="unknown_step"), PlacementRefused, "invalid", 422, 2),
    (LayoutRejected("a layout gives positions to steps"), LayoutRejected, "bad-request", 400, 2),
    (LockoutRejected("name an account, an address or both"), LockoutRejected, "invalid", 422, 2),
    (LockoutNotFound("no failed logins are recorded"), LockoutRejected, "not-found", 404, 2),
    (RunFormRefused("greeter has no version '7': nothing was started."), RunFormRefused, "not-found", 404, 2),
    (Refused("choose how the workflow starts"), Refused, "bad-request", 400, 2),
    (RefusedMissing("there is no such example"), Refused, "not-found", 404, 2),
    (RefusedTooLarge("the file is 2 bytes"), Refused, "too-large", 413, 2),
    (RefusedInvalid("the YAML is empty"), Refused, "invalid", 422, 2),
    (Forbidden("you may not start runs"), PermissionDenied, "forbidden", 403, 4),
], ids=lambda value: type(value).__name__ if isinstance(value, ForgeError) else None)
def test_each_refusal_is_of_its_kind_and_still_caught_as_its_family(exc, family, slug, status, exit_code):
    assert isinstance(exc, ForgeError) and isinstance(exc, family)
    assert kind_of(exc).slug == slug and exit_code_of(exc) == exit_code
    code, body = problem_of(exc)
    assert (code, body["status"], body["type"]) == (status, status, f"https://forge.invalid/problems/{slug}")
    assert body["detail"] == exc.message == str(exc)


def test_the_merge_and_the_problems_a_refusal_carries_are_in_its_problem():
    assert problem_of(SaveConflict(MERGE))[1]["merge"] == MERGE
    body = problem_of(WorkflowRejected([Problem("bad", "no steps", line=3)]))[1]
    assert body["detail"] == "no steps (line 3)" and body["problems"][0]["line"] == 3
    assert problem_of(ScheduleRejected("bad cron", field="cron"))[1]["field"] == "cron"


def test_the_editor_answers_a_refusal_with_its_kinds_status_and_its_code():
    answer = refused(EditStale("revision 1 is not newer than the draft's 2", code="stale_revision", revision=2))
    assert answer.status_code == 409
    assert json.loads(answer.content) == {"error": {"code": "stale_revision", "message": "revision 1 is not newer "
                                                                                        "than the draft's 2"},
                                          "revision": 2}
    forbidden = refused(Forbidden("you may not edit workflows"))
    assert (forbidden.status_code, json.loads(forbidden.content)["error"]["code"]) == (403, "forbidden")


def test_forbidden_is_djangos_permission_denied_so_the_console_answers_its_403_page(client, approver):
    client.force_login(approver)  # may see the console, may not edit workflows

    response = client.get(reverse("console:workflow_new"))

    assert response.status_code == 403
    assert "Forge says: You may not edit workflows." in response.content.decode()
    with pytest.raises(PermissionDenied):
        raise Forbidden("you may not edit workflows")


def test_services_refuse_with_the_kind_of_each_reason(operator, nightly):
    schedule = schedules.schedule_add(user=operator, workflow="nightly", cron="0 9 * * *")
    schedules.schedule_pause(user=operator, schedule=schedule)
    with pytest.raises(Conflict, match=f"^schedule {schedule.pk} is already paused$"):
        schedules.schedule_pause(user=operator, schedule=schedule)
    schedules.schedule_delete(user=operator, schedule=schedule)
    with pytest.raises(NotFound, match=f"^there is no schedule {schedule.pk}$"):
        schedules.schedule_resume(user=operator, schedule=schedule)
    with pytest.raises(Invalid) as bad:
        schedules.schedule_add(user=operator, workflow="nightly", cron="0 9 * * *", overlap="twice")
    assert bad.value.extra == {"field": "overlap"} and not isinstance(bad.value, (Conflict, Stale))
    with pytest.raises(NotFound, match="^no failed logins are recorded for account 'nobody'$"):
        lockout_lift(user=None, username="nobody")


def test_the_forge_command_exits_by_the_table(operator, outsider, nightly):
    def forge(*argv):
        try:
            call_command("forge", *argv, stdout=io.StringIO(), stderr=(err := io.StringIO()))
        except SystemExit as exited:
            return exited.code, err.getvalue()
        return 0, err.getvalue()

    assert forge("--user", "oscar", "schedule", "add", "nightly", "--cron", "@daily") == (
        4, "forge: you may not manage schedules\n")
    assert forge("--user", "olive", "schedule", "pause", "999") == (
        2, "forge: there is no schedule 999; `forge schedules` lists them\n")
