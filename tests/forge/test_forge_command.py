"""`forge run FILE` refuses a file the console would not save, and says why; `forge validate FILE` judges alike."""

import io
import json

import pytest
from django.core.management import call_command

from forge.governance.models import Agent
from forge.runs.management.commands.forge import LOCAL_NOTE
from forge.workflows.models import StepLibraryEntry, WorkflowVersion
from forge.workflows.services import WorkflowRejected, workflow_version_save

USES_A_MISSING_LIBRARY_STEP = """
name: uses_library
steps:
  - id: fetch
    library_step: nosuch
"""


USES_A_LIBRARY_STEP = """
name: uses_library
steps:
  - id: fetch
    library_step: fetch_report
"""

NESTED_SHELL = """
name: nested_shell
args:
  v: {type: string}
steps:
  - id: show
    agent: box
    command: sh -c "echo ${args.v}"
"""


def run_command(*argv):
    """The exit code (0 when the command returns), stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("forge", *argv, stdout=out, stderr=err)
        code = 0
    except SystemExit as exited:
        code = exited.code
    return code, out.getvalue(), err.getvalue().replace(LOCAL_NOTE + "\n", "")  # the local mode's note, once


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


def test_validate_and_run_both_accept_a_step_the_library_has(library_file):
    library_file.write_text(USES_A_LIBRARY_STEP)

    assert run_command("validate", str(library_file)) == (0, f"{library_file}: valid (1 steps)\n", "")
    code, _, err = run_command("run", str(library_file))
    assert code == 0, err
    assert WorkflowVersion.objects.filter(workflow__name="uses_library").exists()


def test_validate_refuses_a_missing_library_step_with_the_lines_run_prints(library_file):
    validate_code, out, _ = run_command("validate", str(library_file))
    run_code, _, err = run_command("run", str(library_file))

    assert (validate_code, run_code) == (1, 2)  # each exits as it always has: invalid, invalid input
    assert "nosuch" in out and out.splitlines() == err.splitlines()


def test_validate_json_has_the_problems_run_refuses_with(library_file):
    _, validated, _ = run_command("validate", str(library_file), "--json")
    _, refused, _ = run_command("run", str(library_file), "--json")

    assert json.loads(validated)["problems"] == json.loads(refused)["problems"] != []


def test_validate_knows_the_shell_agents_saving_knows(db, tmp_path):
    Agent.objects.create(name="box", provider="shell")
    path = tmp_path / "nested_shell.yaml"
    path.write_text(NESTED_SHELL)
    with pytest.raises(WorkflowRejected) as refused:
        workflow_version_save(user=None, source=NESTED_SHELL)

    code, out, _ = run_command("validate", str(path), "--json")

    assert code == 1
    assert json.loads(out)["problems"] == [p.to_json() for p in refused.value.problems]
    assert refused.value.problems[0].code == "expression_error"


def test_validate_says_an_unreadable_file_is_unreadable(db, tmp_path):
    code, out, _ = run_command("validate", str(tmp_path / "missing.yaml"))

    assert code == 2 and "error unreadable: cannot read" in out
