"""The console's suite again on PostgreSQL, in a process of its own started as soon as collection ends
(tests/cluster/conftest.py), so it runs beside the rest of the suite instead of after it: on CI's two cores it
took 7 minutes unloaded and 28 with both cores busy, time the main process spent waiting on it.
Its own database (pytest-django's `test_test`) and data folder keep it apart from what runs beside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.cluster.harness import PG_ADMIN_URL, PYTHON, ROOT

TEST = "tests/cluster/test_console_on_postgres.py::test_the_console_suite_passes_on_postgresql"


class PostgresPass:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="forge-pg-pass-"))
        self.output = self.folder / "output.txt"
        env = {**os.environ, "DATABASE_URL": PG_ADMIN_URL, "FORGE_DATA_DIR": str(self.folder / "data")}
        env.pop("REDIS_URL", None)
        with self.output.open("w") as out:
            # Not the slow tests: each starts a deployment of its own (tests/cluster/harness.py), whose database
            # DATABASE_URL does not choose, so here they would only repeat themselves.
            self.process = subprocess.Popen(
                [PYTHON, "-m", "pytest", "tests/forge", "-q", "-p", "no:cacheprovider", "-x", "-m", "not slow"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait(self, deadline_s: float) -> tuple[int, str]:
        """Its exit code and what it printed, once it has ended (TimeoutExpired past the deadline)."""
        code = self.process.wait(timeout=deadline_s)
        return code, self.output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


running: PostgresPass | None = None


def start_if_selected(session) -> None:
    global running
    if session.config.option.collectonly or running is not None:
        return
    if any(item.nodeid == TEST for item in session.items):
        running = PostgresPass()


def stop() -> None:
    if running is not None:
        running.stop()
