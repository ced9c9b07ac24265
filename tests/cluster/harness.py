"""A real deployment for tests: a fresh database, Forge migrated into it, and `qcluster` processes.

Migrations run once per backend and process, into a template each deployment copies (PostgreSQL's CREATE
DATABASE ... TEMPLATE, SQLite's backup): a copy takes milliseconds where the migrations take seconds, for each of
the suite's hundreds of deployments.

`sqlite` is the embedded default (a SQLite file, the ORM broker); `postgres`
is the production shape (a new PostgreSQL database on 127.0.0.1:5432 and
django-q2's Redis broker on 127.0.0.1:6379, under a queue name of its own).

A test waits on conditions, never on a sleep being long enough: `sql` reads
the deployment's database directly (milliseconds, where `query` starts a
Python process and Django, over a second on a busy machine), `until` polls
any condition with a deadline, and `Gates` holds steps at a barrier the test
opens (tests/cluster/callables.py::gated).

bench/runtime_bench.py deploys with it too, with `test_timings=False` (the installation's defaults).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg

from forge.supervisor import web_server

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PG_ADMIN_URL = os.environ.get("FORGE_TEST_PG_URL", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("FORGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# Short leases and recovery so tests see a crash handled in seconds; the benchmark keeps the defaults.
TEST_TIMINGS = {"FORGE_STEP_TIMEOUT_MAX_S": "60", "FORGE_TASK_MARGIN_S": "5", "FORGE_LEASE_S": "3",
                "FORGE_RECOVERY_S": "1", "FORGE_WORKERS": "4"}


_TEMPLATES: dict[str, str] = {}  # backend -> its migrated template: a database name, or a SQLite file's path
_STATIC: list[Path] = []  # the static files this process collected, once


def _manage(env: dict[str, str], *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and done.returncode not in (0, 1, 3):
        raise AssertionError(f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def _pg_url(name: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


def _migrated(backend: str, env: dict[str, str]) -> str:
    """This process's migrated template of `backend`, made by the first deployment that asks (in its environment,
    which migrations do not read beyond the database) and removed as the process exits."""
    if backend in _TEMPLATES:
        return _TEMPLATES[backend]
    folder = Path(tempfile.mkdtemp(prefix="forge-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    env = {**env, "FORGE_DATA_DIR": str(folder)}
    if backend == "postgres":
        template = f"forge_tpl_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{template}"')
        atexit.register(_drop_template, template)
        env["DATABASE_URL"] = _pg_url(template)
    else:
        template = str(folder / "forge.sqlite3")
        env["FORGE_SQLITE_PATH"] = template
    _manage(env, "migrate", "-v0", timeout=600)
    if backend == "postgres":  # no connection may hold a template while it is copied, autovacuum's included
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{template}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
    _TEMPLATES[backend] = template
    return template


def _collected(env: dict[str, str]) -> Path:
    """This process's collectstatic output (seconds of hashing and compressing), made once, removed at exit."""
    if not _STATIC:
        folder = Path(tempfile.mkdtemp(prefix="forge-static-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _manage({**env, "FORGE_DATA_DIR": str(folder)}, "collectstatic", "--no-input", "-v0", timeout=600)
        _STATIC.append(folder / "static")
    return _STATIC[0]


def _drop_template(name: str) -> None:
    with contextlib.suppress(Exception), psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Deployment:
    def __init__(self, workdir: Path, backend: str = "sqlite", *, test_timings: bool = True, **env: str):
        self.workdir = workdir
        self.backend = backend
        self.name = f"forge_t_{uuid.uuid4().hex[:10]}"
        self.processes: list[subprocess.Popen] = []
        self._db = None
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "forge.settings",
            "FORGE_SECRET_KEY": "cluster-tests-secret-key-0123456789-abcdefghijklmnop",
            "FORGE_DATA_DIR": str(workdir),
            "FORGE_QUEUE_NAME": self.name,
            **(TEST_TIMINGS if test_timings else {}),
            "FORGE_SSL_REDIRECT": "0",
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.env.pop("DATABASE_URL", None)
        self.env.pop("REDIS_URL", None)
        try:
            workdir.mkdir(parents=True, exist_ok=True)  # as migrate made it when it ran here
            template = _migrated(backend, self.env)
            if backend == "postgres":
                with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{self.name}" TEMPLATE "{template}"')
                self.env["DATABASE_URL"] = _pg_url(self.name)
                self.env["REDIS_URL"] = REDIS_URL
            else:
                self.env["FORGE_SQLITE_PATH"] = str(workdir / "forge.sqlite3")
                with contextlib.closing(sqlite3.connect(template)) as source, \
                        contextlib.closing(sqlite3.connect(self.env["FORGE_SQLITE_PATH"])) as copy:
                    source.backup(copy)
        except BaseException:
            with contextlib.suppress(Exception):  # nobody holds this deployment yet to close it; keep the cause
                self.close()
            raise

    def manage(self, *args: str, check: bool = True, timeout: float = 300,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return _manage({**self.env, **(env or {})}, *args, check=check, timeout=timeout)

    def collect_static(self) -> None:
        """The static files in place as bin/serve's collectstatic leaves them (pages name hashed files): a link to
        the files this process collected once."""
        (Path(self.env["FORGE_DATA_DIR"]) / "static").symlink_to(_collected(self.env), target_is_directory=True)

    def forge(self, *args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return self.manage("forge", *args, check=False, timeout=timeout, env=env)

    def query(self, code: str, timeout: float = 120):
        """Run Python with Django set up against this deployment; `code` assigns `result`, which comes back."""
        program = ("import django, json; django.setup()\n" + code + "\nprint(json.dumps(result, default=str))")
        done = subprocess.run([PYTHON, "-c", program], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode:
            raise AssertionError(done.stderr[-3000:])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start_cluster(self) -> subprocess.Popen:
        log = open(self.workdir / f"qcluster-{len(self.processes)}.log", "w")
        process = subprocess.Popen([PYTHON, str(ROOT / "manage.py"), "qcluster"], cwd=ROOT, env=self.env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def start_daphne(self, port: int) -> subprocess.Popen:
        """The web server on 127.0.0.1:`port` as bin/serve starts it, once it answers."""
        log = open(self.workdir / f"daphne-{time.monotonic_ns()}.log", "w")
        process = subprocess.Popen(web_server(str(port)), cwd=ROOT, env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        self.until(lambda: _answers(f"http://127.0.0.1:{port}/login/"), timeout=120, what="daphne answers")
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
        if self._db is not None:
            self._db.close()
            self._db = None
        for process in self.processes:
            if process.poll() is None:
                try:
                    # qcluster stops its workers itself on SIGTERM (a second or two), handing running steps back
                    # (docs/runtime.md, Stopping); a step that ignores its cancel keeps it waiting: then SIGKILL.
                    os.kill(process.pid, signal.SIGTERM)
                    process.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            self.kill(process)  # whatever is left of its group
        if self.backend == "postgres":
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

    def sql(self, statement: str, params: tuple = ()) -> list[tuple]:
        """Rows of one statement (`%s` placeholders) run straight on the deployment's database; datetimes
        come back as aware UTC datetimes on both backends."""
        if self.backend == "postgres":
            if self._db is None:
                self._db = psycopg.connect(self.env["DATABASE_URL"], autocommit=True)
            cursor = self._db.execute(statement, params)
            return [tuple(_utc(v) for v in row) for row in cursor.fetchall()] if cursor.description else []
        with sqlite3.connect(self.env["FORGE_SQLITE_PATH"], timeout=30) as db:
            return [tuple(_utc(v) for v in row) for row in db.execute(statement.replace("%s", "?"), params)]

    def run_row(self, run_id: int) -> dict:
        """The run's status, error_code and restart_count, read directly."""
        rows = self.sql("SELECT status, error_code, restart_count FROM forge_runs_run WHERE id = %s", (run_id,))
        return dict(zip(("status", "error_code", "restart_count"), rows[0])) if rows else {}

    def step_rows(self, run_id: int) -> dict[str, dict]:
        """The run's step rows by step id: status, error code, attempt, lease owner and lease, read directly."""
        names = ("step", "status", "error_code", "attempt", "executing", "lease_owner", "lease_expires_at", "started_at")
        rows = self.sql(f"SELECT {', '.join(names)} FROM forge_runs_stepresult WHERE run_id = %s", (run_id,))
        return {row[0]: dict(zip(names, row)) for row in rows}

    def finished(self, run_id: int, *, timeout: float = 180) -> dict:
        """Wait until the run has ended; its run_row."""
        return self.until(lambda: (row := self.run_row(run_id)).get("status") in ("completed", "failed",
                                                                                   "cancelled") and row,
                          timeout=timeout, what=f"run {run_id} ends")

    def until(self, condition, *, timeout: float, what: str, every: float = 0.1):
        """Poll `condition()` until it returns something truthy, which is returned."""
        deadline = time.monotonic() + timeout
        while not (value := condition()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still not so after {timeout} s; cluster logs:\n{self.logs()}")
            time.sleep(every)
        return value

    def logs(self) -> str:
        paths = sorted(self.workdir.glob("qcluster-*.log")) + sorted(self.workdir.glob("daphne-*.log"))
        return "\n".join(path.read_text()[-3000:] for path in paths)


@contextlib.contextmanager
def deployed(prefix: str, backend: str, *, on_error=None, **kwargs):
    """A Deployment in a new temporary folder, closed and removed after the block; when the block fails, the
    cluster's log tail goes to `on_error` first."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    deployment = None
    try:
        deployment = Deployment(workdir, backend, **kwargs)
        yield deployment
    except BaseException:
        if deployment is not None and on_error is not None:
            on_error(f"{backend}: cluster log tail:\n{deployment.logs()}")
        raise
    finally:
        if deployment is not None:
            deployment.close()
        shutil.rmtree(workdir, ignore_errors=True)


def queued_python_agent(deployment: Deployment) -> None:
    """A python agent `worker` whose steps go through execute_step (not inline in advance)."""
    deployment.query("from forge.governance.models import Agent\n"
                     "Agent.objects.update_or_create(name='worker', defaults={'provider': 'python', "
                     "'config': {'inline': False}})\nresult = True")


def _answers(url: str) -> bool:
    """Whether a web server answers `url` at all (any status: a page may need files only collectstatic makes)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _utc(value):
    """SQLite keeps Django's datetimes as text in UTC; PostgreSQL returns them aware."""
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] in " T" and value[13] == ":":
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return value
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return value


def now() -> datetime:
    return datetime.now(timezone.utc)


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


class Gates:
    """Barriers for steps that run tests/cluster/callables.py::gated. Such a step writes a marker when it starts
    (`started.STEP.*`, holding its pid) and waits until the test opens its gate, so whatever the test does
    meanwhile (a kill, a look at the database) lands while the step surely runs, on any machine."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def started(self, step: str) -> int:
        return len(list(self.path.glob(f"started.{step}.*")))

    def pids(self, step: str) -> list[int]:
        return [int(marker.read_text() or 0) for marker in sorted(self.path.glob(f"started.{step}.*"))]

    def wait_started(self, deployment: Deployment, step: str, count: int = 1, *, timeout: float = 120) -> None:
        deployment.until(lambda: self.started(step) >= count, timeout=timeout,
                         what=f"{count} execution(s) of {step} started")

    def open(self, step: str) -> None:
        (self.path / f"open.{step}").touch()

    def kill_started(self, step: str) -> None:
        """SIGKILL every execution of `step` that started: a test never leaves one behind, whatever its outcome."""
        for pid in self.pids(step):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
