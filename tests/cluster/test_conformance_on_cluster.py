"""Every conformance run case ends the same through the cluster as through the local runner."""

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


def run_cases() -> list[tuple[str, Path, list[str]]]:
    found = []
    for expected in sorted(CASES.glob("*.expected.json")):
        case = json.loads(expected.read_text())
        if case.get("mode") == "run":
            name = expected.name[: -len(".expected.json")]
            found.append((name, CASES / f"{name}.yaml", case.get("argv", [])))
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
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    deployment = Deployment(tmp_path_factory.mktemp("conformance"), "sqlite", FORGE_WORKERS="6")
    deployment.start_cluster()
    yield deployment
    deployment.close()


def test_every_run_case_ends_as_it_does_in_the_local_runner(cluster):
    cases = run_cases()
    assert len(cases) >= 20

    def compare(case):
        name, path, argv = case
        code, expected = local(path, argv)
        done = cluster.forge("run", str(path), "--wait", "--json", "--timeout", "120", *argv)
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
    failing = {name: found for name, found in results.items() if found}
    assert not failing, json.dumps(failing, indent=1)
