"""The same workflow gives the same JSON whatever Python's hash seed: no set order reaches the output."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = """
name: determinism
variables: {mode: full}
steps:
  - {id: root, agent: mock, command: start, mock: {outputs: {tags: [b, a], meta: {z: 1, a: 2}}}}
""" + "".join(f"""  - {{id: w{i:02d}, agent: mock, command: "work ${{root.outputs.meta.a}}", depends_on: [root],
     on_failure: {policy}, mock: {{fail_times: {i % 3}, outputs: {{k{i % 4}: {i}}}}}}}
""" for i, policy in enumerate(["retry", "skip", "retry_once", "continue"] * 5)) + """
  - id: join
    agent: mock
    command: join
    depends_on: [w00, w01, w02, w03, w04, w05, w06, w07, w08, w09, w10, w11]
    trigger_rule: none_failed_min_one_success
  - {id: broken, agent: mock, command: x, depends_on: [join], mock: {fail_times: 1}}
  - {id: later_a, agent: mock, command: x, depends_on: [broken]}
  - {id: later_b, agent: mock, command: x, depends_on: [w19]}
  - {id: tidy, agent: mock, command: x, depends_on: [later_a, later_b], trigger_rule: all_done}
"""


def run_engine(path: Path, seed: str, command: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run([sys.executable, "-m", "engine", command[0], str(path), "--json", *command[1:]],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    return result.returncode, result.stdout


@pytest.mark.parametrize("command, exit_code", [
    (["run", "--fast", "--quiet"], 1),  # `broken` halts the run
    (["plan"], 0),
    (["validate"], 0),
])
def test_output_is_identical_under_two_hash_seeds(tmp_path, command, exit_code):
    path = tmp_path / "determinism.yaml"
    path.write_text(WORKFLOW, encoding="utf-8")
    first = run_engine(path, "1", command)
    second = run_engine(path, "4242", command)
    assert first[0] == exit_code
    assert first == second
