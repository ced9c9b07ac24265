"""Every example runs as its header comment says, and completes: what a new user copies first must work."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def header_command(path: Path) -> list[str]:
    """The `python -m engine run ...` command of the file's opening comment (continued with backslashes)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines).replace("\\ ", " ")
    start = text.index("python -m engine run ")
    return shlex.split(text[start:])


def test_there_are_examples_of_each_loop_flavour():
    names = {path.stem for path in EXAMPLES}
    assert {"code_review", "interview"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_completes_as_its_header_says(path):
    argv = header_command(path)
    assert argv[:4] == ["python", "-m", "engine", "run"]
    args = argv[4:] + (["--fast"] if "--fast" not in argv else [])
    done = subprocess.run([sys.executable, "-m", "engine", "run", *args, "--json", "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout)
    assert (done.returncode, result["status"]) == (0, "completed"), done.stderr[-2000:]


def test_the_loop_examples_name_their_calls_as_the_seed_does():
    def run(name: str) -> dict:
        path = ROOT / "examples" / f"{name}.yaml"
        done = subprocess.run([sys.executable, "-m", "engine", "run", *header_command(path)[4:], "--fast", "--json",
                               "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout)["steps"]

    assert run("code_review")["review"]["history"] == ["review", "review_fix_1", "review_2"]
    assert run("interview")["ask"]["history"] == ["ask_iter_1", "ask_iter_2", "ask_iter_3"]
