"""`forge run FILE` refuses a file the console would not save, and says why."""

import io
import json

import pytest
from django.core.management import call_command

from forge.workflows.models import StepLibraryEntry, WorkflowVersion

USES_A_MISSING_LIBRARY_STEP = """
name: uses_library
steps:
  - id: fetch
    library_step: nosuch
"""


def run_command(*argv):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("forge", *argv, stdout=out, stderr=err)
    return exited.value.code, out.getvalue(), err.getvalue()


@pytest.fixture
def library_file(db, tmp_path):
    StepLibraryEntry.objects.create(name="fetch_report", definition={"agent": "mock", "command": "fetch"})
    path = tmp_path / "uses_library.yaml"
    path.write_text(USES_A_MISSING_LIBRARY_STEP)
    return path


def test_a_file_the_library_cannot_complete_is_refused_with_its_problem(library_file):
    code, _, err = run_command("run", str(library_file))
    assert code == 2
    assert f"{library_file}:" in err and "nosuch" in err
    assert not WorkflowVersion.objects.filter(workflow__name="uses_library").exists()


def test_with_json_the_refusal_is_one_object_with_the_problems(library_file):
    code, out, _ = run_command("run", str(library_file), "--json")
    assert code == 2
    refused = json.loads(out)
    assert refused["valid"] is False and any("nosuch" in p["message"] for p in refused["problems"])
