"""The project's own public cases (tests/engine/cases), checked by the conformance suite's own checker.

They are written in the conformance case format (shared/conformance/FORMAT.md section 6) so that the same
files also run through the cluster; the second half of this file holds them to that format.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"
CHECKER = ROOT.parent / "shared" / "conformance" / "check.py"


def _load_checker():
    spec = importlib.util.spec_from_file_location("conformance_check", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load_checker()
NAMES = sorted(p.name[: -len(".expected.json")] for p in CASES.glob("*.expected.json"))


def expected(name: str) -> dict:
    return json.loads((CASES / f"{name}.expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_case_passes_the_conformance_checker(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # the checker runs `python -m engine` from the project root
    reason = check.run_case(sys.executable, str(CASES / f"{name}.yaml"), str(CASES / f"{name}.expected.json"))
    assert reason is None, f"{name}: {reason}"


# -- the cases keep to the format the checker and the cluster test read ---------------------------------------

def test_there_are_run_and_validate_cases():
    modes = [expected(name)["mode"] for name in NAMES]
    assert modes.count("run") >= 12 and modes.count("validate") >= 5


@pytest.mark.parametrize("name", NAMES)
def test_case_files_are_in_the_conformance_format(name):
    lines = (CASES / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# Checks: "), "the first line says what the case checks"
    case = expected(name)
    assert set(case) == {"mode", "argv", "exit_code", "expect"}
    assert check.load_case(str(CASES / f"{name}.expected.json")) == case
    assert name.startswith(case["mode"] + "_")


@pytest.mark.parametrize("name", [n for n in NAMES if expected(n)["mode"] == "run"])
def test_run_cases_use_only_what_the_cluster_can_replay(name):
    """Mock and shell agents only; argv only --arg, --decide and --reply pairs (the cluster test passes them on)."""
    document = yaml.safe_load((CASES / f"{name}.yaml").read_text(encoding="utf-8"))
    agents = {step.get("agent") for step in document["steps"]} - {None}
    for step in document["steps"]:
        fix = ((step.get("loop") or {}).get("on_request_changes") or {})
        agents.add(fix.get("fix_agent", step.get("agent")))
    assert agents - {None} <= {"mock", "shell"}
    argv = expected(name)["argv"]
    assert len(argv) % 2 == 0
    for flag, value in zip(argv[::2], argv[1::2]):
        assert flag in {"--arg", "--decide", "--reply"} and "=" in value


# -- what a case cannot read: the runner's notes on stderr -----------------------------------------------------

def run_cli(name: str, *argv: str):
    import subprocess
    return subprocess.run([sys.executable, "-m", "engine", "run", str(CASES / f"{name}.yaml"), "--json", "--fast",
                           *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_an_ignored_reply_is_noted_on_stderr_without_its_text():
    done = run_cli("run_reply_unknown_step_ignored", "--reply", "ghost=my secret answer")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "completed"
    assert "ghost" in done.stderr and "ignored" in done.stderr
    assert "my secret answer" not in done.stderr


@pytest.mark.parametrize("argv", [["--reply", "no_equals_sign"], ["--reply", "=text without a step"]])
def test_a_reply_that_names_no_step_is_invalid_input(argv):
    done = run_cli("run_reply_gate_paused", *argv)
    assert done.returncode == 2
    assert "error" in json.loads(done.stdout) and "--reply" in done.stderr
