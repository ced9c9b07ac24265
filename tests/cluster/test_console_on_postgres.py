"""The console's whole suite again, on PostgreSQL: the runtime writes its rounds in SQL of its own
(forge/runs/store.py), so what passes on SQLite must pass on the production database too."""

import os
import subprocess
import sys
from pathlib import Path

from tests.cluster.harness import PG_ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]


# The deadline only stops a hung suite: CI's machine may be slow and busy (the suite takes minutes unloaded).
DEADLINE_S = 3600


def test_the_console_suite_passes_on_postgresql(tmp_path):
    env = {**os.environ, "DATABASE_URL": PG_ADMIN_URL, "FORGE_DATA_DIR": str(tmp_path)}
    env.pop("REDIS_URL", None)
    # Not the slow tests: each starts a deployment of its own (tests/cluster/harness.py), whose database
    # DATABASE_URL does not choose, so here they would only repeat themselves.
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/forge", "-q", "-p", "no:cacheprovider", "-x",
                           "-m", "not slow"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary
