"""A real deployment for tests: a fresh database, Forge migrated into it, and `qcluster` processes.

`sqlite` is the embedded default (a SQLite file, the ORM broker); `postgres`
is the production shape (a new PostgreSQL database on 127.0.0.1:5432 and
django-q2's Redis broker on 127.0.0.1:6379, under a queue name of its own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PG_ADMIN_URL = os.environ.get("FORGE_TEST_PG_URL", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("FORGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


class Deployment:
    def __init__(self, workdir: Path, backend: str = "sqlite", **env: str):
        self.workdir = workdir
        self.backend = backend
        self.name = f"forge_t_{uuid.uuid4().hex[:10]}"
        self.processes: list[subprocess.Popen] = []
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "forge.settings",
            "FORGE_SECRET_KEY": "cluster-tests-secret-key-0123456789-abcdefghijklmnop",
            "FORGE_DATA_DIR": str(workdir),
            "FORGE_QUEUE_NAME": self.name,
            "FORGE_STEP_TIMEOUT_MAX_S": "60",
            "FORGE_TASK_MARGIN_S": "5",
            "FORGE_LEASE_S": "3",
            "FORGE_RECOVERY_S": "1",
            "FORGE_WORKERS": "4",
            "FORGE_SSL_REDIRECT": "0",
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.env.pop("DATABASE_URL", None)
        self.env.pop("REDIS_URL", None)
        if backend == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
            self.env["DATABASE_URL"] = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{self.name}"
            self.env["REDIS_URL"] = REDIS_URL
        else:
            self.env["FORGE_SQLITE_PATH"] = str(workdir / "forge.sqlite3")
        self.manage("migrate", "-v0")

    def manage(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode not in (0, 1, 3):
            raise AssertionError(f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done

    def forge(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return self.manage("forge", *args, check=False, timeout=timeout)

    def query(self, code: str):
        """Run Python with Django set up against this deployment; `code` assigns `result`, which comes back."""
        program = ("import django, json; django.setup()\n" + code + "\nprint(json.dumps(result, default=str))")
        done = subprocess.run([PYTHON, "-c", program], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)
        if done.returncode:
            raise AssertionError(done.stderr[-3000:])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start_cluster(self) -> subprocess.Popen:
        log = open(self.workdir / f"qcluster-{len(self.processes)}.log", "w")
        process = subprocess.Popen([PYTHON, str(ROOT / "manage.py"), "qcluster"], cwd=ROOT, env=self.env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """SIGKILL the cluster and every process it started, as a machine crash would."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(process)
        if self.backend == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            import redis

            client = redis.Redis.from_url(REDIS_URL)
            for key in client.scan_iter(f"django_q:{self.name}:*"):
                client.delete(key)

    def wait_for(self, code: str, *, timeout: float, every: float = 0.5):
        """Poll `query(code)` until its result is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(code)
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"still {result!r} after {timeout} s; cluster logs:\n{self.logs()}")
            time.sleep(every)

    def logs(self) -> str:
        return "\n".join(path.read_text()[-3000:] for path in sorted(self.workdir.glob("qcluster-*.log")))
