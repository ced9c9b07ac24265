"""docs/api.md says what is true: its list of problem types is forge/errors.py's table (and HTTP's own rows), and
its curl session, run exactly as written with bash against a live daphne and cluster, prints what the guide says a
person reads: the token, the run started then replayed, the approval waiting, the decision accepted, the stream's
events ending with the run's completion, and the run completed."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from forge.api.problems import HTTP_ONLY
from forge.errors import PROBLEMS
from tests.browser.console import free_port
from tests.cluster.harness import ROOT, deployed

DOC = ROOT / "docs" / "api.md"
SESSION = "## A session with curl"
PASSWORD = "a long Passphrase, 2 spaces  and all"  # read by `read -r`: spaces and a comma kept
ADA = ("from django.contrib.auth.models import Group, User\n"
       f"ada = User.objects.create_user('ada', password={PASSWORD!r})\n"
       "ada.groups.add(*Group.objects.filter(name__in=['Operators', 'Approvers']))\nresult = True")
SESSION_S = 240


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of its level."""
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end != -1 else len(text)]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_guide_lists_every_problem_type_with_its_status():
    rows = re.findall(r"^\| `([a-z-]+)` \| (\d{3}) \|", section(DOC.read_text(), "## Errors"), flags=re.M)
    table = {(p.slug, p.status) for p in [*PROBLEMS.values(), *HTTP_ONLY.values()]}
    assert len(rows) == len(set(rows)), "a problem type is listed twice"
    assert set((slug, int(status)) for slug, status in rows) == table


def test_the_session_is_found_and_is_only_commands_a_person_types():
    blocks = sh_blocks(section(DOC.read_text(), SESSION))
    assert len(blocks) >= 6
    session = "\n".join(blocks)
    for said in ("/api/v1/auth/token", "Idempotency-Key", "text/event-stream", "/decision", "curl -sS -N"):
        assert said in session, said
    assert "sleep 0.5" in session and "for _ in $(seq 120)" in session  # a loop with a deadline, not a long sleep


@pytest.fixture(scope="module")
def live():
    with deployed("forge-docs-api-", "sqlite", FORGE_ALLOW_SELF_APPROVAL="1") as deployment:  # ada decides her run
        deployment.query(ADA)
        deployment.start_cluster()
        port = free_port()
        deployment.start_daphne(port)
        deployment.url = f"http://127.0.0.1:{port}"
        yield deployment


@pytest.mark.slow
def test_the_curl_session_of_the_guide_runs_as_written(live, tmp_path):
    script = "set -euo pipefail\n" + "\n".join(sh_blocks(section(DOC.read_text(), SESSION)))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8", "FORGE": live.url}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, input=f"ada\n{PASSWORD}\n",
                          capture_output=True, text=True, timeout=SESSION_S)
    out = done.stdout
    assert done.returncode == 0, f"stdout:\n{out}\nstderr:\n{done.stderr}\n{live.logs()}"
    lines = out.splitlines()

    # Logged in: the token printed, and what it is.
    secret = lines[1]  # the first line is the newline after the unechoed password
    assert re.fullmatch(r"forge_pat_[A-Za-z0-9_-]{43}", secret), lines[:3]
    made = json.loads(lines[2])
    assert (made["owner"], made["scopes"]) == ("ada", ["runs:write", "approvals:decide", "workflows:write"])
    assert json.loads(lines[3]) == {"workflow": "ship", "number": 1}

    # Started, then the same request replayed: the same run, one run only.
    assert (lines[4], lines[6], lines[7].lower()) == ("HTTP/1.1 201 Created", "HTTP/1.1 201 Created",
                                                     "idempotent-replayed: true")
    first, again = json.loads(lines[5]), json.loads(lines[8])
    assert first == again and first["workflow"] == "ship"
    assert live.sql("SELECT count(*) FROM forge_runs_run") == [(1,)]
    run = first["id"]

    # The approval waited, the decision was accepted, the run completed.
    (approval,) = live.sql("SELECT id FROM forge_runs_approval WHERE run_id = %s", (run,))
    assert lines[9] == f"approval {approval[0]} is waiting" and lines[10] == "202"
    assert lines[-3:-1] == ["204", f"run {run} completed"]
    assert json.loads(lines[-1]) == {"prefix": secret[:16], "revoked_at": True}
    assert live.run_row(run)["status"] == "completed"

    # The stream, as the guide shows it: events in id order, the approval before the run's own completion, last.
    stream = (tmp_path / "events.txt").read_text()
    assert stream.startswith("retry: 3000\n\n")
    events = [dict(line.split(": ", 1) for line in chunk.splitlines())
              for chunk in stream.split("\n\n") if chunk.startswith("id: ")]
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(set(ids)) and len(ids) >= 5
    kinds = [e["event"] for e in events]
    data = [json.loads(e["data"]) for e in events]
    assert kinds[-1] == "run" and data[-1]["data"]["status"] == "completed"
    asked = next(i for i, d in enumerate(data) if d["kind"] == "approval" and d["data"]["status"] == "pending")
    decided = next(i for i, d in enumerate(data) if d["kind"] == "approval" and d["data"].get("decision"))
    assert asked < decided < len(data) - 1
    assert "kind" in data[0] and all(d["id"] == i for d, i in zip(data, ids))
    # What the guide prints of it: the kinds in order, and the last event, the run's completion.
    assert lines[11] == " ".join(kinds)
    assert lines[12:15] == [f"id: {ids[-1]}", "event: run", f"data: {events[-1]['data']}"]
    assert Path(tmp_path / "run.json").exists() and secret not in stream
