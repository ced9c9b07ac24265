"""Each main command prints the same lines and JSON, and exits the same, locally (as the installation's admin)
and through the API (as an Admin's token), here against the Django app in this process (test_live_server.py does
it against a live daphne and cluster)."""

from __future__ import annotations

import json

import httpx
import pytest
from django.core.wsgi import get_wsgi_application

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
