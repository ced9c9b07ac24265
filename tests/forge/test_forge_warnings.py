"""`forge validate FILE` and `forge run FILE|NAME` show validation warnings (spec 15's unknown_name) with their
lines, as `python -m engine` does: validate exits 0, run starts the run, and --json output stays one object."""

import json

import pytest

from forge.runs.models import Run
from tests.forge.test_forge_command import run_command
from tests.typo_workflow import SAID, TYPO


@pytest.fixture
def typo(db, tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(TYPO, encoding="utf-8")
    return str(path)


def test_validate_lists_the_warning_with_its_line_and_exits_0(typo):
    code, out, _ = run_command("validate", typo)
    assert code == 0
    assert f"{typo}:12:16: warning unknown_name [deploy]: {SAID}" in out
    assert out.strip().endswith("valid (2 steps)")
    code, out, _ = run_command("validate", typo, "--json")
    assert code == 0 and [(w["code"], w["line"]) for w in json.loads(out)["warnings"]] == [("unknown_name", 12)]


def test_run_of_a_file_prints_the_warning_and_starts_the_run(typo):
    code, out, err = run_command("run", typo, "--json")
    assert code == 0
    assert f"{typo}:12:16: warning unknown_name [deploy]: {SAID}" in err
    assert json.loads(out)["run"] == Run.objects.get().pk


def test_run_of_a_saved_workflow_by_name_prints_the_warning_too(typo):
    run_command("run", typo)
    code, _, err = run_command("run", "typo")
    assert code == 0 and Run.objects.count() == 2
    assert f"typo:12:16: warning unknown_name [deploy]: {SAID}" in err


def test_a_document_without_warnings_prints_none(db, tmp_path):
    path = tmp_path / "clean.yaml"
    path.write_text(TYPO.replace('"redy"', '"ready"'), encoding="utf-8")
    code, _, err = run_command("run", str(path))
    assert code == 0 and "warning" not in err
