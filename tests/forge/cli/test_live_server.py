"""The `forge` script on a person's machine against a live daphne and cluster: it logs in (the config 0600), runs
a workflow with --wait following the run's event stream, and prints and exits as `manage.py forge` does on the
server itself. The script runs without Django settings, as it would where only the API is reachable."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest

from tests.browser.console import free_port
from tests.cluster.harness import ROOT, deployed
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.slow
WAIT_S = "120"
TOKEN = ("from django.contrib.auth.models import Group, User\nfrom forge.accounts.tokens import token_create\n"
         "adam = User.objects.create(username='adam')\nadam.groups.add(Group.objects.get(name='Admins'))\n"
         "result = token_create(user=adam, name='cli', scopes=['runs:read', 'runs:write', 'approvals:decide', "
         "'workflows:write', 'governance:admin', 'audit:read'])[1]")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with deployed("forge-cli-", "sqlite", FORGE_PYTHON_CALLABLES="forge.runs.callables.noop",
                  FORGE_ALLOW_SELF_APPROVAL="1") as deployment:  # the token's owner decides its own run
        secret = deployment.query(TOKEN)
        deployment.start_cluster()
        port = free_port()
        deployment.start_daphne(port)
        home = tmp_path_factory.mktemp("home")
        (home / "token").write_text(secret)
        deployment.script_env = {"PATH": os.environ["PATH"], "HOME": str(home),
                                 "XDG_CONFIG_HOME": str(home / "config")}
        deployment.url = f"http://127.0.0.1:{port}"
        deployment.home = home
        yield deployment


def script(live, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from forge.cli import main; main()", *argv], cwd=ROOT,
                          env=live.script_env, input=stdin, capture_output=True, text=True, timeout=300)


def same(text: str) -> str:
    """Output with run ids taken out (each mode starts its own run)."""
    return re.sub(r"run \d+", "run N", text)


def started(err: str) -> int:
    """The run a `forge run` started, from its `run N of WORKFLOW vV started` line on stderr."""
    return int(re.search(r"^run (\d+) of .* started$", err, re.MULTILINE)[1])


def test_login_from_stdin_keeps_the_config_private(live):
    done = script(live, "login", live.url, "--token-file", "-", stdin=(live.home / "token").read_text())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"logged in to {live.url} as adam")
    path = live.home / "config" / "forge" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_run_wait_follows_the_run_and_exits_as_locally(live, tmp_path):
    script(live, "login", live.url, "--token-file", str(live.home / "token"))
    path = tmp_path / "needs_a_yes.yaml"
    path.write_text(APPROVAL)
    there = script(live, "run", str(path), "--wait", "--timeout", WAIT_S)
    here = live.forge("run", str(path), "--wait", "--timeout", WAIT_S)
    assert (there.returncode, here.returncode) == (3, 3), there.stderr + here.stderr  # paused for sign_off
    assert same(there.stdout) == same(here.stdout) and same(there.stdout).endswith("run N paused\n")

    there = script(live, "run", str(path), "--wait", "--json", "--decide", "sign_off=approve", "--timeout", WAIT_S)
    here = live.forge("run", str(path), "--wait", "--json", "--decide", "sign_off=approve", "--timeout", WAIT_S)
    assert (there.returncode, here.returncode) == (0, 0), there.stderr + here.stderr
    printed = there.stdout
    assert printed == here.stdout  # the run's report, byte for byte (it holds no id or time)
    report = json.loads(printed)
    assert (report["status"], [s["status"] for s in report["steps"].values()]) == ("completed", ["completed"] * 3)
    runs = [started(done.stderr) for done in (there, here)]
    there, here = script(live, "status", str(runs[1]), "--json"), live.forge("status", str(runs[0]), "--json")
    assert (there.returncode, there.stdout) == (here.returncode, here.stdout) == (0, printed)
    there, here = script(live, "status", str(runs[0])), live.forge("status", str(runs[0]))
    assert (there.returncode, there.stdout) == (here.returncode, here.stdout)  # and the lines for people
    assert here.stdout.endswith(f"run {runs[0]} completed\n")


def test_the_reads_through_the_live_server_match_local(live):
    script(live, "login", live.url, "--token-file", str(live.home / "token"))
    for argv in (("workflows", "--json"), ("approvals", "--json"), ("schedules",), ("killswitch",)):
        there, here = script(live, *argv), live.forge(*argv)
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), argv
