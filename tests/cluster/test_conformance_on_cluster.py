"""Every conformance run case, and every run case of the project's own (tests/engine/cases: seed 002's loops),
ends the same through the cluster as through the local runner; `forge reply` answers a running cluster's reply
request once."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cluster.harness import ROOT, Deployment

pytestmark = pytest.mark.slow

CASES = ROOT.parent / "shared" / "conformance" / "cases"
OWN_CASES = ROOT / "tests" / "engine" / "cases"
EXIT_INVALID = 2


def run_cases(folder: Path = CASES) -> list[tuple[str, Path, list[str]]]:
    found = []
    for expected in sorted(folder.glob("*.expected.json")):
        case = json.loads(expected.read_text())
        if case.get("mode") == "run":
            name = expected.name[: -len(".expected.json")]
            found.append((name, folder / f"{name}.yaml", case.get("argv", [])))
    return found


def local(path: Path, argv: list[str]) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "engine", "run", str(path), "--json", "--fast", *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def differences(expected: dict, actual: dict) -> list[str]:
    found = []
    if expected["status"] != actual["status"]:
        found.append(f"run status {expected['status']} vs {actual['status']}")
    for step, want in expected["steps"].items():
        got = actual["steps"].get(step, {})
        for key in ("status", "attempts", "outputs"):
            if want[key] != got.get(key):
                found.append(f"{step}.{key}: {want[key]!r} vs {got.get(key)!r}")
        for key in ("history", "iterations"):  # a loop step's calls, by the seed's names
            if (key in want or key in got) and want.get(key) != got.get(key):
                found.append(f"{step}.{key}: {want.get(key)!r} vs {got.get(key)!r}")
    return found


def compare_all(cluster: Deployment, cases: list[tuple[str, Path, list[str]]]) -> dict[str, list[str]]:
    def compare(case):
        name, path, argv = case
        code, expected = local(path, argv)
        done = cluster.forge("run", str(path), "--wait", "--json", "--timeout", "120", *argv)
        if code == EXIT_INVALID:
            # Refused input (an empty --reply, --decide on a reply request): both refuse it, with a message.
            found = [] if done.returncode == EXIT_INVALID and done.stderr.strip() else [
                f"the local runner refused it (exit 2); forge exited {done.returncode}: {done.stderr[-800:]}"]
            return name, found
        try:
            actual = json.loads(done.stdout)
        except ValueError:
            return name, [f"forge printed no JSON (exit {done.returncode}): {done.stderr[-800:]}"]
        found = differences(expected, actual)
        if code != done.returncode:
            found.append(f"exit {code} vs {done.returncode}")
        return name, found

    with ThreadPoolExecutor(8) as pool:
        results = dict(pool.map(compare, cases))
    return {name: found for name, found in results.items() if found}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    deployment = Deployment(tmp_path_factory.mktemp("conformance"), "sqlite", FORGE_WORKERS="6")
    deployment.start_cluster()
    yield deployment
    deployment.close()


def test_every_run_case_ends_as_it_does_in_the_local_runner(cluster):
    cases = run_cases()
    assert len(cases) >= 20
    failing = compare_all(cluster, cases)
    assert not failing, json.dumps(failing, indent=1)


def test_every_loop_case_of_the_projects_own_ends_as_it_does_in_the_local_runner(cluster):
    cases = run_cases(OWN_CASES)
    assert len(cases) >= 15, [name for name, _, _ in cases]
    failing = compare_all(cluster, cases)
    assert not failing, json.dumps(failing, indent=1, ensure_ascii=False)


INTERVIEW = """
name: cluster_interview
steps:
  - id: ask
    agent: mock
    command: "question ${loop.iteration} after ${loop.replies}"
    approval_message: "Answer question ${loop.iteration}"
    loop: {max_iterations: 3, gate: reply}
    mock:
      sequence:
        - {stdout: "What is the deadline?"}
        - {stdout: "Who signs it off?"}
        - {stdout: "Thanks."}
"""


def test_forge_reply_answers_a_running_clusters_request_once(cluster, tmp_path):
    path = tmp_path / "cluster_interview.yaml"
    path.write_text(INTERVIEW, encoding="utf-8")
    started = cluster.forge("run", str(path), "--wait", "--json", "--timeout", "60")
    assert started.returncode == 3, started.stderr  # paused: waiting for the first reply
    run_id = int(started.stderr.split("run ", 1)[1].split()[0])

    listed = json.loads(cluster.forge("approvals", "--json").stdout)
    assert [(r["step"], r["kind"], r["iteration"], r["output"]) for r in listed if r["run"] == run_id] == [
        ("ask", "reply", 1, "What is the deadline?")]

    answer = tmp_path / "answer.txt"
    answer.write_text("Friday noon\n", encoding="utf-8")
    done = cluster.forge("reply", str(run_id), "ask", "--file", str(answer))
    assert done.returncode == 0, done.stderr
    # The cluster takes it: the next iteration runs and asks again.
    cluster.until(lambda: cluster.sql("SELECT status FROM forge_runs_approval WHERE run_id = %s AND iteration = 2",
                                      (run_id,)), timeout=60, what="the second reply request")
    assert cluster.sql("SELECT status, reply FROM forge_runs_approval WHERE run_id = %s AND iteration = 1",
                       (run_id,)) == [("answered", "Friday noon\n")]

    again = cluster.forge("reply", str(run_id), "ask", "Monday", "--iteration", "1")
    assert again.returncode == 2
    assert "already answered" in again.stderr
    assert cluster.sql("SELECT reply FROM forge_runs_approval WHERE run_id = %s AND iteration = 1",
                       (run_id,)) == [("Friday noon\n",)]
    audits = cluster.sql("SELECT code, detail FROM forge_audit_auditevent WHERE run_id = %s AND code IN "
                         "('forge.approval.reply_requested', 'forge.approval.answered') ORDER BY id", (run_id,))
    assert [code for code, _ in audits] == ["forge.approval.reply_requested", "forge.approval.answered"]
    assert all("Friday" not in str(detail) for _, detail in audits)

    last = cluster.forge("reply", str(run_id), "ask", "Dana")
    assert last.returncode == 0, last.stderr
    status = cluster.until(lambda: [s for (s,) in cluster.sql("SELECT status FROM forge_runs_run WHERE id = %s",
                                                              (run_id,)) if s == "completed"],
                           timeout=60, what="the run completed")
    assert status == ["completed"]
    shown = cluster.forge("status", str(run_id))
    assert "ask: ask_iter_1, ask_iter_2, ask_iter_3" in shown.stdout
