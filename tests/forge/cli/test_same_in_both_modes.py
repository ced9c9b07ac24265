"""Each main command prints the same lines and JSON, and exits the same, locally (as the installation's admin)
and through the API (as an Admin's token), here against the Django app in this process (test_live_server.py does
it against a live daphne and cluster)."""

from __future__ import annotations

import json

import httpx
import pytest
from django.core.wsgi import get_wsgi_application

from engine.terminal import run_exit
from forge.accounts.tokens import token_create
from forge.runs import services
from forge.runs.models import Approval, Run
from tests.forge.cli.helpers import local, remote
from tests.forge.cli.test_login_and_refusals import SCOPES, URL
from tests.forge.conftest import fast_forward
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
INVALID = "name: broken\nsteps:\n  - {id: a, agent: mock, command: x, depends_on: [nowhere]}\n"


@pytest.fixture
def server(tmp_path, monkeypatch, admin_user):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FORGE_URL", raising=False)
    app = httpx.WSGITransport(app=get_wsgi_application())
    (tmp_path / "token").write_text(token_create(user=admin_user, name="cli", scopes=SCOPES)[1])
    assert remote("login", URL, "--token-file", str(tmp_path / "token"), transport=app)[0] == 0
    return app


def waiting_run(save_workflow, operator) -> Run:
    run = fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL)))
    assert Approval.objects.filter(run=run, status=Approval.PENDING).exists()
    return run


def both(app, *argv):
    here, there = local(*argv), remote(*argv, transport=app)
    assert here == there
    return here


def test_the_reads_print_the_same(server, save_workflow, operator, tmp_path):
    run = waiting_run(save_workflow, operator)
    (tmp_path / "ok.yaml").write_text(APPROVAL)
    (tmp_path / "bad.yaml").write_text(INVALID)
    assert {"name": "needs_a_yes", "versions": 1, "latest": 1, "description": ""} in json.loads(
        both(server, "workflows", "--json")[1])
    both(server, "workflows")
    rows = json.loads(both(server, "approvals", "--json")[1])
    assert [(r["run"], r["step"], r["kind"]) for r in rows] == [(run.pk, "sign_off", "approval")]
    assert f"run {run.pk} needs_a_yes / sign_off (approval): ship it?" in both(server, "approvals")[1]
    assert both(server, "validate", str(tmp_path / "ok.yaml")) == (0, f"{tmp_path / 'ok.yaml'}: valid (3 steps)\n",
                                                                   "")
    assert both(server, "validate", str(tmp_path / "ok.yaml"), "--json")[0] == 0
    code, out, _ = both(server, "validate", str(tmp_path / "bad.yaml"), "--json")
    assert (code, json.loads(out)["valid"]) == (1, False)
    assert both(server, "validate", str(tmp_path / "missing.yaml"))[0] == 2
    assert both(server, "status", str(run.pk))[1].endswith(f"run {run.pk} paused\n")
    assert both(server, "status", "999999")[0] == 2
    assert both(server, "schedules", "--json") == (0, "[]\n", "")
    assert both(server, "killswitch") == (0, "kill switch off; schedules fire at their cron times\n", "")


def test_the_writes_print_the_same(server, save_workflow, operator):
    first, second = waiting_run(save_workflow, operator), waiting_run(save_workflow, operator)
    decided = local("approve", str(first.pk), "sign_off"), remote("approve", str(second.pk), "sign_off",
                                                                  transport=server)
    assert decided == ((0, f"run {first.pk} / sign_off: approve\n", ""), (0, f"run {second.pk} / sign_off: approve\n",
                                                                          ""))
    assert local("approve", str(first.pk), "sign_off") == remote("approve", str(first.pk), "sign_off",
                                                                 transport=server)  # none pending: exit 2
    for run in (first, second):
        fast_forward(run)
        assert Run.objects.get(pk=run.pk).status == "completed"
    here = local("restart", str(first.pk), "--from", "ship", "--json")
    there = remote("restart", str(second.pk), "--from", "ship", "--json", transport=server)
    assert (here[0], there[0]) == (0, 0)
    assert {**json.loads(here[1]), "run": 0, "restarted_from": 0} == {**json.loads(there[1]), "run": 0,
                                                                      "restarted_from": 0} == {
        "run": 0, "restarted_from": 0, "step": "ship"}
    third, fourth = waiting_run(save_workflow, operator), waiting_run(save_workflow, operator)
    assert local("cancel", str(third.pk)) == (0, f"run {third.pk}: cancel requested\n", "")
    assert remote("cancel", str(fourth.pk), transport=server) == (0, f"run {fourth.pk}: cancel requested\n", "")
    here = local("schedule", "add", "needs_a_yes", "--cron", "0 9 * * 1-5", "--json")
    there = remote("schedule", "add", "needs_a_yes", "--cron", "0 9 * * 1-5", "--json", transport=server)
    mine, theirs = json.loads(here[1]), json.loads(there[1])
    assert (mine["owner"], theirs["owner"]) == (None, "adam")  # the admin itself, and the token's owner
    assert {**mine, "id": 0, "owner": None} == {**theirs, "id": 0, "owner": None}
    assert local("schedule", "pause", str(mine["id"])) == (0, f"schedule {mine['id']} paused\n", "")
    assert remote("schedule", "pause", str(theirs["id"]), transport=server) == (0, f"schedule {theirs['id']} paused\n",
                                                                                 "")
    assert both(server, "schedules")[0] == 0
    here, there = local("schedule", "delete", "999999"), remote("schedule", "delete", "999999", transport=server)
    assert here[:2] == there[:2] == (2, "")  # each says there is no such schedule in its own words
    assert "no schedule 999999" in here[2] and "no schedule 999999" in there[2]


# -- a run's report: `status --json` and `run --wait --json`, byte for byte ------------------------------------------

DONE = """
name: done_fine
args:
  who: {type: string, default: world}
steps:
  - {id: hello, agent: mock, command: "say hello to ${args.who}", mock: {outputs: {said: hi}}}
  - {id: bye, agent: mock, command: bye, depends_on: [hello]}
"""
FAILS = """
name: fails
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: "the store answered 503"}}
  - {id: report, agent: mock, command: report, depends_on: [load]}
"""
SECRET = "tok-4242-never-shown"
HOLDS_A_SECRET = """
name: holds_a_secret
args:
  api_token: {type: string, required: true}
steps:
  - {id: call, agent: shell, command: "printf 'using %s' ${args.api_token}"}
  - {id: sign_off, approval: required, approval_message: "ship with ${args.api_token}?", depends_on: [call]}
"""


def started_run(err: str) -> int:
    """The run a `forge run` started, from its `run N of ... started` line on stderr."""
    return int(next(line for line in err.splitlines() if line.startswith("run ")).split()[1])


def run_in_both(app, path, *argv) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """`forge run PATH --wait ARGV` locally and through the API: each starts its own run."""
    here = local("run", str(path), "--wait", "--timeout", "60", *argv)
    there = remote("run", str(path), "--wait", "--timeout", "60", *argv, transport=app)
    return here, there


def report_in_both(app, workflow: str, tmp_path, *argv, code: int) -> dict:
    """`run --wait --json` and then `status --json` of each mode's run answer the same bytes and exit `code`; the
    report printed."""
    path = tmp_path / f"{workflow.split()[1]}.yaml"
    path.write_text(workflow)
    here, there = run_in_both(app, path, "--json", *argv)
    assert (here[0], there[0]) == (code, code), here[2] + there[2]
    assert here[1] == there[1]
    runs = started_run(here[2]), started_run(there[2])
    assert runs[0] != runs[1]
    shown = [local("status", str(runs[0]), "--json"), remote("status", str(runs[1]), "--json", transport=app)]
    assert shown[0] == shown[1] == (0, here[1], "")  # the report as `run --wait` printed it
    assert [local("status", str(runs[1]))[1].replace(f"run {runs[1]}", "run N"),
            remote("status", str(runs[0]), transport=app)[1].replace(f"run {runs[0]}", "run N")] == [
        local("status", str(runs[0]))[1].replace(f"run {runs[0]}", "run N")] * 2  # and the lines for people
    return json.loads(here[1])


def test_a_completed_run_reports_alike_and_exits_0(server, tmp_path):
    report = report_in_both(server, DONE, tmp_path, "--arg", "who=ann", code=0)
    assert (report["status"], report["dispatch_order"]) == ("completed", ["hello", "bye"])
    assert report["steps"]["hello"]["outputs"] == {"said": "hi"} and report["variables"]["who"] == "ann"


def test_a_failed_run_reports_alike_and_exits_1(server, tmp_path):
    report = report_in_both(server, FAILS, tmp_path, code=1)
    assert report["status"] == "failed" and "503" in report["steps"]["load"]["error"]
    assert report["steps"]["report"]["error_code"] == "upstream_failed"


def test_a_run_waiting_for_an_approval_is_paused_in_both_and_exits_3(server, tmp_path):
    report = report_in_both(server, APPROVAL, tmp_path, code=3)
    assert report["status"] == "paused"
    assert report["approvals"] == [{"step": "sign_off", "kind": "approval", "status": "pending", "decision": None}]


def test_a_run_decided_on_the_way_completes_in_both(server, tmp_path, settings):
    settings.FORGE_ALLOW_SELF_APPROVAL = True  # the token's owner decides the run it started, as locally
    report = report_in_both(server, APPROVAL, tmp_path, "--decide", "sign_off=approve", code=0)
    assert report["status"] == "completed"
    assert report["approvals"] == [{"step": "sign_off", "kind": "approval", "status": "approved",
                                    "decision": "approve"}]


def test_a_secret_argument_is_never_printed_in_either_mode(server, tmp_path):
    report = report_in_both(server, HOLDS_A_SECRET, tmp_path, "--arg", f"api_token={SECRET}", code=3)
    assert report["variables"]["api_token"] == "[redacted]"
    assert report["steps"]["call"]["stdout"] == "using [redacted]"
    path = tmp_path / "holds_a_secret.yaml"
    for printed in (*run_in_both(server, path, "--arg", f"api_token={SECRET}"),
                    *run_in_both(server, path, "--arg", f"api_token={SECRET}", "--json")):
        assert printed[0] == 3 and SECRET not in printed[1] + printed[2]
    for run in Run.objects.all():
        for argv in (("status", str(run.pk)), ("status", str(run.pk), "--json")):
            assert SECRET not in "".join(map(str, local(*argv) + remote(*argv, transport=server)))


def test_status_of_a_cancelled_run_and_of_none_exits_alike(server, save_workflow, operator):
    run = waiting_run(save_workflow, operator)
    services.run_cancel(user=operator, run=run, reason="not today")
    fast_forward(run)
    code, out, err = both(server, "status", str(run.pk), "--json")
    assert (code, json.loads(out)["status"], err) == (0, "cancelled", "")
    assert both(server, "status", str(run.pk))[1].endswith(f"run {run.pk} cancelled: cancelled by olive: not today\n")
    code, out, err = both(server, "status", "999999", "--json")
    assert (code, out, err) == (2, "", "forge: There is no run 999999.\n")


BOTH_WAYS = """
name: both_ways
steps:
  - {id: sign_off, approval: required}
  - {id: flaky, agent: mock, command: fetch, retry: {max_retries: 2, backoff_s: 600}, mock: {fail_times: 1}}
"""


def test_a_run_with_a_request_pending_and_a_retry_due_is_not_paused_in_either_mode(server, save_workflow, operator):
    """No step runs and an approval is pending, but a retry is due: the run goes on by itself, so it is not paused
    (exit 3 would tell a script a person must act) in either mode."""
    with_timer = services.run_start(user=operator, version=save_workflow(BOTH_WAYS))
    assert Approval.objects.filter(run=with_timer, status=Approval.PENDING).exists()
    code, out, _ = both(server, "status", str(with_timer.pk), "--json")
    report = json.loads(out)
    assert code == 0
    assert (report["status"], report["steps"]["sign_off"]["status"]) == ("running", "waiting")
    assert (report["steps"]["flaky"]["status"], report["steps"]["flaky"]["attempts"]) == ("pending", 1)  # backing off
    assert both(server, "status", str(with_timer.pk))[1].endswith(f"run {with_timer.pk} running\n")


@pytest.mark.parametrize("status, code", [("completed", 0), ("failed", 1), ("cancelled", 1), ("paused", 3)])
def test_both_modes_exit_on_the_report_by_one_table(status, code):
    """`run --wait` exits on the report's status in either mode through engine.terminal.run_exit, the table
    `python -m engine run` exits by too (a cancelled run cannot be made to end while a test's `run --wait` waits
    in-process)."""
    assert run_exit(status) == code


def test_a_saved_workflow_is_run_and_scheduled_by_its_name_alike(server, save_workflow):
    """`forge run NAME` and `forge schedule add NAME --arg` name a saved workflow, not a file: both modes find its
    latest version (the remote mode read a field the workflow's answer does not have, and found none)."""
    save_workflow(DONE)
    here, there = (local("run", "done_fine", "--wait", "--json", "--arg", "who=ann"),
                   remote("run", "done_fine", "--wait", "--json", "--arg", "who=ann", transport=server))
    assert (here[0], there[0]) == (0, 0), here[2] + there[2]
    assert here[1] == there[1] and json.loads(here[1])["variables"]["who"] == "ann"
    assert local("run", "no_such_workflow")[:2] == remote("run", "no_such_workflow", transport=server)[:2] == (2, "")
    mine = json.loads(local("schedule", "add", "done_fine", "--cron", "0 9 * * *", "--arg", "who=bo", "--json")[1])
    theirs = json.loads(remote("schedule", "add", "done_fine", "--cron", "0 9 * * *", "--arg", "who=bo", "--json",
                               transport=server)[1])
    assert mine["args"] == theirs["args"] == {"who": "bo"}
