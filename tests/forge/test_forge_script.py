"""The `forge` console script as a shell user meets it: exit codes and what a pipe sees."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.runs.management.commands.forge import LOCAL_NOTE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """An embedded installation of its own, migrated."""
    env = {**os.environ, "FORGE_DATA_DIR": str(tmp_path_factory.mktemp("forge")), "FORGE_DEBUG": "1"}
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    return env


def forge(env, *argv, **run):
    return subprocess.run([sys.executable, "-c", "from forge.cli import main; main()", *argv], cwd=ROOT, env=env,
                          text=True, timeout=120, **run)


def test_a_reader_that_goes_away_stops_it_quietly(env):
    read, write = os.pipe()
    os.close(read)  # `forge schedules | head -0`: every write meets a closed pipe
    try:
        done = forge(env, "schedules", stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, LOCAL_NOTE + "\n")  # no server stored: it says it acts locally


def test_an_unknown_user_is_invalid_input(env):
    done = forge(env, "--user", "nobody", "schedules", capture_output=True)
    assert (done.returncode, done.stderr.strip()) == (2, "forge: --user: there is no user 'nobody'")
