"""`python -m engine` shows validation warnings (spec 15's unknown_name) wherever it validates: `validate` lists
them and exits 0; `run` and `plan` print them on stderr and go on, their JSON on stdout unchanged."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.typo_workflow import SAID, TYPO

ROOT = Path(__file__).resolve().parents[2]



def engine(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def typo(tmp_path) -> str:
    path = tmp_path / "typo.yaml"
    path.write_text(TYPO, encoding="utf-8")
    return str(path)


def test_validate_lists_the_warning_with_its_line_and_exits_0(typo):
    done = engine("validate", typo)
    assert done.returncode == 0
    assert f"{typo}:12:16: warning unknown_name [deploy]: {SAID}" in done.stdout
    assert done.stdout.strip().endswith("valid (2 steps)")
    as_json = json.loads(engine("validate", typo, "--json").stdout)
    assert as_json["valid"] is True and [(w["code"], w["line"]) for w in as_json["warnings"]] == [("unknown_name", 12)]


@pytest.mark.parametrize("command", [["run", "--fast"], ["plan"]])
def test_run_and_plan_print_the_warning_on_stderr_and_go_on(typo, command):
    done = engine(command[0], typo, "--json", *command[1:])
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # one JSON object, untouched
    assert "warning unknown_name [deploy]" in done.stderr and ":12:16:" in done.stderr


def test_the_unknown_name_reads_as_null_at_run_time(typo):
    result = json.loads(engine("run", typo, "--json", "--fast", "--quiet").stdout)
    assert result["status"] == "completed" and result["steps"]["deploy"]["status"] == "skipped"
