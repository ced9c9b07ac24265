"""The schedules and kill switch operations of /api/v1: each through the services `forge schedule` and the admin
call, refused inputs as problems that change nothing, every change audited with the person (and the token)."""

from __future__ import annotations

import pytest

from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.schedules import services
from forge.schedules.models import KillSwitch, Schedule
from tests.forge.api.calls import API, events, problem, raw, send, signed_in, with_token
from tests.forge.schedules.conftest import REPORT

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(save_workflow):
    return save_workflow(REPORT).workflow


@pytest.fixture
def schedule(report, operator):
    return services.schedule_add(user=operator, workflow=report, cron="0 9 * * 1-5", timezone="Europe/Berlin",
                                 args={"region": "eu"})


ADD = {"workflow": "nightly_report", "cron": "*/10 * * * *", "timezone": "Europe/Berlin",
       "args": {"region": "eu", "copies": 2}, "overlap": "queue_one"}


# -- list and read ---------------------------------------------------------------------------------------------

def test_a_member_lists_the_schedules_as_the_cli_prints_them(schedule, approver):
    answer = signed_in(approver).get(API + "schedules")
    assert answer.status_code == 200
    (row,) = answer.json()["results"]
    assert row["id"] == schedule.pk and row["workflow"] == "nightly_report" and row["cron"] == "0 9 * * 1-5"
    assert row["timezone"] == "Europe/Berlin" and row["owner"] == "olive" and row["enabled"] is True
    assert row["args"] == {"region": "eu"} and row["next_fire_at"]
    assert answer.json()["next"] is None


def test_the_list_filters_by_workflow_and_state(schedule, operator, report):
    services.schedule_pause(user=operator, schedule=schedule)
    client = signed_in(operator)
    assert client.get(API + "schedules", {"enabled": "no"}).json()["results"][0]["id"] == schedule.pk
    assert client.get(API + "schedules", {"enabled": "yes"}).json()["results"] == []
    assert client.get(API + "schedules", {"workflow": "other"}).json()["results"] == []
    body = problem(client.get(API + "schedules", {"enabled": "maybe"}), 400)
    assert "enabled" in body["detail"]


def test_the_list_reads_a_bounded_number_of_queries(report, operator, django_assert_max_num_queries):
    client = signed_in(operator)
    client.get(API + "schedules")  # the session and the groups, read once per request either way
    for minute in range(12):
        services.schedule_add(user=operator, workflow=report, cron=f"{minute} * * * *", args={"region": "eu"})
    with django_assert_max_num_queries(8):
        answer = client.get(API + "schedules")
    assert len(answer.json()["results"]) == 12


def test_an_outsider_may_not_list_or_read_schedules(schedule, outsider):
    client = signed_in(outsider)
    problem(client.get(API + "schedules"), 403)
    problem(client.get(API + f"schedules/{schedule.pk}"), 403)
    problem(client.get(API + "kill-switch"), 403)


def test_nobody_signed_in_is_told_to_sign_in(schedule):
    from rest_framework.test import APIClient
    problem(APIClient().get(API + "schedules"), 401)


def test_one_schedule_is_read_and_an_unknown_one_is_404(schedule, approver):
    client = signed_in(approver)
    assert client.get(API + f"schedules/{schedule.pk}").json()["cron"] == "0 9 * * 1-5"
    assert problem(client.get(API + f"schedules/{schedule.pk + 99}"), 404)["code"] == "no_such_schedule"
    assert client.get(API + "schedules/abc").status_code == 404
    problem(client.get(API + "schedules/" + "9" * 30), 404)


# -- add -------------------------------------------------------------------------------------------------------

def test_an_operator_adds_a_schedule_audited_in_their_name(report, operator):
    answer = send(signed_in(operator), "POST", "schedules", {**ADD, "require_approval": True,
                                                             "approvers": ["Admins"]})
    assert answer.status_code == 201, answer.content
    body = answer.json()
    made = Schedule.objects.get(pk=body["id"])
    assert (made.cron, made.timezone, made.overlap, made.owner) == ("*/10 * * * *", "Europe/Berlin", "queue_one",
                                                                    operator)
    assert made.args == {"region": "eu", "copies": 2} and made.require_approval and made.approvers == ["Admins"]
    (event,) = events(codes.SCHEDULE_ADDED)
    assert event.actor == "olive" and event.target == f"schedule:{made.pk}" and event.token_id is None


def test_a_schedule_added_paused_has_no_next_time(report, operator):
    body = send(signed_in(operator), "POST", "schedules", {**ADD, "enabled": False}).json()
    assert body["enabled"] is False and body["next_fire_at"] is None


def test_a_change_through_a_token_names_the_token(report, operator):
    client = with_token(operator, "runs:write")
    answer = send(client, "POST", "schedules", ADD)
    assert answer.status_code == 201
    (event,) = events(codes.SCHEDULE_ADDED)
    assert event.actor == "olive" and event.token_id is not None


def test_a_runs_write_token_reads_and_changes_the_schedules_it_manages(report, operator):
    client = with_token(operator, "runs:write")  # runs:write includes runs:read: it finds what it changes
    added = send(client, "POST", "schedules", ADD).json()
    assert [s["id"] for s in send(client, "GET", "schedules").json()["results"]] == [added["id"]]
    assert send(client, "POST", f"schedules/{added['id']}/pause").json()["enabled"] is False
    assert send(client, "PATCH", f"schedules/{added['id']}", {"cron": "0 7 * * *"}).json()["cron"] == "0 7 * * *"
    assert send(client, "DELETE", f"schedules/{added['id']}").status_code == 204
    assert not Schedule.objects.exists()


def test_a_token_without_runs_write_may_not_add(report, operator):
    body = problem(send(with_token(operator, "runs:read"), "POST", "schedules", ADD), 403)
    assert body["code"] == "scope_missing"
    assert not Schedule.objects.exists()


@pytest.mark.parametrize("who", ["approver", "outsider"])
def test_who_may_not_manage_schedules_adds_none(report, who, request):
    problem(send(signed_in(request.getfixturevalue(who)), "POST", "schedules", ADD), 403)
    assert not Schedule.objects.exists() and not events(codes.SCHEDULE_ADDED)


BAD_BODIES = [
    # (what is wrong, the body, the status, the field named)
    ("an unknown field", {**ADD, "owner": "adam"}, 400, "owner"),
    ("a cron that is a number", {**ADD, "cron": 5}, 400, "cron"),
    ("no cron", {k: v for k, v in ADD.items() if k != "cron"}, 400, "cron"),
    ("a cron of six fields", {**ADD, "cron": "0 0 9 * * 1"}, 422, "cron"),
    ("a cron that never fires", {**ADD, "cron": "0 9 31 2 *"}, 422, "cron"),
    ("a minute past 59", {**ADD, "cron": "61 * * * *"}, 422, "cron"),
    ("a huge cron", {**ADD, "cron": "* " * 3000}, 400, "cron"),
    ("an unknown time zone", {**ADD, "timezone": "Mars/Olympus"}, 422, "timezone"),
    ("a time zone that is a list", {**ADD, "timezone": ["UTC"]}, 400, "timezone"),
    ("an unknown workflow", {**ADD, "workflow": "nope"}, 422, "workflow"),
    ("arguments that are a list", {**ADD, "args": ["eu"]}, 422, "args"),
    ("an argument the workflow lacks", {**ADD, "args": {"region": "eu", "colour": "red"}}, 422, "args"),
    ("an argument of the wrong type", {**ADD, "args": {"region": "eu", "copies": "two"}}, 422, "args"),
    ("an unknown overlap", {**ADD, "overlap": "pile_up"}, 422, "overlap"),
    ("enabled as a word", {**ADD, "enabled": "yes"}, 400, "enabled"),
    ("require_approval as a number", {**ADD, "require_approval": 1}, 400, "require_approval"),
    ("an unknown approving group", {**ADD, "approvers": ["Nobody"]}, 422, "approvers"),
    ("approvers as a text", {**ADD, "approvers": "Admins"}, 400, "approvers"),
    ("too many approvers", {**ADD, "approvers": [f"g{i}" for i in range(500)]}, 400, "approvers"),
    ("a NUL in the workflow's name", {**ADD, "workflow": "nightly\x00report"}, 400, "workflow"),
    ("a NUL in an argument", {**ADD, "args": {"region": "e\x00u"}}, 400, "args"),
]


@pytest.mark.parametrize("why,body,status,field", BAD_BODIES, ids=[case[0] for case in BAD_BODIES])
def test_a_bad_body_is_a_problem_naming_its_field_and_adds_nothing(report, operator, why, body, status, field):
    answer = problem(send(signed_in(operator), "POST", "schedules", body), status)
    assert field in answer["errors"], answer
    assert not Schedule.objects.exists() and not AuditEvent.objects.filter(code=codes.SCHEDULE_ADDED).exists()


@pytest.mark.parametrize("text", ['{"workflow": ', "[]", '"nightly"', '{"cron": 1e400}', "{" * 100 + "}" * 100,
                                  '{"workflow": "nightly_report", "cron": "* * * * \\ud800"}'])  # no character
def test_a_body_that_is_no_object_of_fields_is_a_400(report, operator, text):
    problem(raw(signed_in(operator), "POST", "schedules", text), 400)
    assert not Schedule.objects.exists()


def test_a_wrong_method_is_a_405(schedule, operator):
    client = signed_in(operator)
    problem(send(client, "PUT", "schedules", ADD), 405)
    problem(client.get(API + f"schedules/{schedule.pk}/pause"), 405)
    problem(send(client, "POST", f"schedules/{schedule.pk}", ADD), 405)


# -- change, pause, resume, delete -----------------------------------------------------------------------------

def test_a_change_takes_the_fields_given_and_makes_the_person_its_owner(schedule, admin_user):
    answer = send(signed_in(admin_user), "PATCH", f"schedules/{schedule.pk}", {"cron": "30 7 * * *",
                                                                                "args": {"region": "us"}})
    assert answer.status_code == 200, answer.content
    schedule.refresh_from_db()
    assert (schedule.cron, schedule.timezone, schedule.args) == ("30 7 * * *", "Europe/Berlin", {"region": "us"})
    assert schedule.owner == admin_user and answer.json()["owner"] == "adam"
    (event,) = events(codes.SCHEDULE_CHANGED)
    assert event.actor == "adam" and event.detail["after"]["cron"] == "30 7 * * *"


@pytest.mark.parametrize("body,status", [({"enabled": False}, 400), ({"timezone": "Nowhere/Land"}, 422),
                                         ({"cron": "every day"}, 422), ({"args": {"copies": 3}}, 422),
                                         ({"overlap": None}, 400), ({"nonsense": 1}, 400)])
def test_a_refused_change_changes_nothing(schedule, operator, body, status):
    before = Schedule.objects.filter(pk=schedule.pk).values().get()
    problem(send(signed_in(operator), "PATCH", f"schedules/{schedule.pk}", body), status)
    assert Schedule.objects.filter(pk=schedule.pk).values().get() == before
    assert not events(codes.SCHEDULE_CHANGED)


def test_changing_an_unknown_schedule_is_a_404(schedule, operator):
    problem(send(signed_in(operator), "PATCH", f"schedules/{schedule.pk + 5}", {"cron": "* * * * *"}), 404)


def test_pause_and_resume_are_audited_and_say_when_they_change_nothing(schedule, operator):
    client = signed_in(operator)
    paused = send(client, "POST", f"schedules/{schedule.pk}/pause")
    assert paused.status_code == 200 and paused.json()["enabled"] is False and paused.json()["next_fire_at"] is None
    assert problem(send(client, "POST", f"schedules/{schedule.pk}/pause"), 409)["detail"]
    resumed = send(client, "POST", f"schedules/{schedule.pk}/resume")
    assert resumed.json()["enabled"] is True and resumed.json()["next_fire_at"]
    problem(send(client, "POST", f"schedules/{schedule.pk}/resume"), 409)
    assert [e.actor for e in events(codes.SCHEDULE_PAUSED) + events(codes.SCHEDULE_RESUMED)] == ["olive", "olive"]
    problem(send(client, "POST", f"schedules/{schedule.pk + 9}/pause"), 404)


def test_an_approver_may_not_pause(schedule, approver):
    problem(send(signed_in(approver), "POST", f"schedules/{schedule.pk}/pause"), 403)
    schedule.refresh_from_db()
    assert schedule.enabled


def test_delete_removes_the_schedule_audited(schedule, operator):
    client = signed_in(operator)
    answer = send(client, "DELETE", f"schedules/{schedule.pk}")
    assert answer.status_code == 204
    assert not Schedule.objects.exists()
    (event,) = events(codes.SCHEDULE_DELETED)
    assert event.actor == "olive" and event.detail["before"]["cron"] == "0 9 * * 1-5"
    problem(send(client, "DELETE", f"schedules/{schedule.pk}"), 404)


def test_an_outsider_may_not_delete(schedule, outsider):
    problem(send(signed_in(outsider), "DELETE", f"schedules/{schedule.pk}"), 403)
    assert Schedule.objects.filter(pk=schedule.pk).exists()


def test_a_schedule_answers_its_secret_arguments_redacted_and_keeps_them(report, operator, save_workflow):
    save_workflow("name: deploy\nargs:\n  api_token: {type: string}\nsteps:\n  - id: go\n    agent: mock\n"
                  "    command: go\n    mock: {outputs: {done: true}}\n")
    answer = send(signed_in(operator), "POST", "schedules", {"workflow": "deploy", "cron": "@daily",
                                                             "args": {"api_token": "s3cret-value"}})
    assert answer.status_code == 201, answer.content
    assert "s3cret-value" not in answer.content.decode()
    assert Schedule.objects.get().args == {"api_token": "s3cret-value"}
    shown = answer.json()["args"]
    assert shown == {"api_token": "[redacted]"}
    changed = send(signed_in(operator), "PATCH", f"schedules/{answer.json()['id']}", {"args": shown,
                                                                                    "cron": "@hourly"})
    assert changed.status_code == 200, changed.content
    assert Schedule.objects.get().args == {"api_token": "s3cret-value"}


# -- the kill switch ---------------------------------------------------------------------------------------------

def test_every_member_reads_the_kill_switch(approver):
    body = signed_in(approver).get(API + "kill-switch").json()
    assert body == {"engaged": False, "reason": "", "changed_by": None, "changed_at": None}


def test_an_admin_engages_and_lifts_the_kill_switch_audited(admin_user, approver):
    client = signed_in(admin_user)
    answer = send(client, "PUT", "kill-switch", {"engaged": True, "reason": "a runaway schedule"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["engaged"] is True and answer.json()["changed_by"] == "adam"
    assert signed_in(approver).get(API + "kill-switch").json()["reason"] == "a runaway schedule"
    assert problem(send(client, "PUT", "kill-switch", {"engaged": True, "reason": "again"}), 409)
    send(client, "PUT", "kill-switch", {"engaged": False, "reason": "fixed"})
    assert [(e.code, e.actor) for e in AuditEvent.objects.filter(target="killswitch").order_by("id")] == [
        (codes.KILLSWITCH_ENGAGED, "adam"), (codes.KILLSWITCH_LIFTED, "adam")]


@pytest.mark.parametrize("who", ["operator", "approver", "outsider"])
def test_only_admins_set_the_kill_switch(who, request):
    problem(send(signed_in(request.getfixturevalue(who)), "PUT", "kill-switch", {"engaged": True, "reason": "x"}),
            403)
    assert not KillSwitch.objects.filter(engaged=True).exists()


def test_an_admins_token_needs_governance_admin_for_the_kill_switch(admin_user):
    body = problem(send(with_token(admin_user, "runs:write"), "PUT", "kill-switch",
                        {"engaged": True, "reason": "x"}), 403)
    assert body["code"] == "scope_missing"
    setter = with_token(admin_user, "governance:admin")
    assert send(setter, "PUT", "kill-switch", {"engaged": True, "reason": "x"}).status_code == 200
    assert send(setter, "GET", "kill-switch").json()["engaged"] is True  # who sets it reads it
    assert send(with_token(admin_user, "runs:read"), "GET", "kill-switch").json()["engaged"] is True
    refused = problem(send(with_token(admin_user, "audit:read"), "GET", "kill-switch"), 403)
    assert refused["scopes"] == ["runs:read", "runs:write", "governance:admin"]


@pytest.mark.parametrize("body", [{"engaged": True}, {"engaged": True, "reason": "   "},
                                  {"engaged": "on", "reason": "x"}, {"reason": "x"},
                                  {"engaged": True, "reason": "x" * 2001},
                                  {"engaged": True, "reason": "x", "until": "tomorrow"}])
def test_a_bad_kill_switch_body_changes_nothing(admin_user, body):
    problem(send(signed_in(admin_user), "PUT", "kill-switch", body), 400)
    assert not KillSwitch.objects.filter(engaged=True).exists()
    assert not AuditEvent.objects.filter(target="killswitch").exists()


def test_the_kill_switch_takes_no_post(admin_user):
    problem(send(signed_in(admin_user), "POST", "kill-switch", {"engaged": True, "reason": "x"}), 405)


def test_a_schedule_is_added_only_with_its_audit_row(report, operator, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("the audit trail could not be written")

    monkeypatch.setattr("forge.schedules.services.audit", refuse)
    with pytest.raises(RuntimeError):
        send(signed_in(operator), "POST", "schedules", ADD)
    assert not Schedule.objects.exists()
