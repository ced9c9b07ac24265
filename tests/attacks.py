"""What a hostile shell step tries against the worker that runs it, shared by the local runner's and the cluster's
sandbox tests. Each command exits 0 when the attack worked and non-zero when it was stopped, so the same step
without a sandbox (the control) shows that the attack is real.

A layout like a deployment's: DATA/secret_key, DATA/forge.sqlite3, DATA/work/run-1 (the step's run),
DATA/work/run-2/notes.txt (another run's file).
"""

from __future__ import annotations

from pathlib import Path

SECRET = "forge-secret-key-that-no-step-may-read"

# python3 is Debian's (/usr/bin), which every sandbox has; `sh` is dash, without /dev/tcp.
CONNECT = "python3 -c 'import socket,sys; s=socket.create_connection((\"127.0.0.1\", {port}), 3); sys.exit(0)'"
UNIX = ("python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); "
        "s.connect(\"/var/run/postgresql/.s.PGSQL.5432\")'")
FORK = ("python3 -c '\nimport os,sys\nr,w=os.pipe()\nn=0\ntry:\n  while n<5000:\n    if os.fork()==0:\n"
        "      os.close(w); os.read(r,1); os._exit(0)\n    n+=1\nexcept OSError as e: print(\"forked\",n,e)\n"
        "sys.exit(0 if n==5000 else 1)'")
ALLOCATE = "python3 -c 'import mmap; m=mmap.mmap(-1, 8<<30); m[(8<<30)-1]=1; m[0]=1'"


def attacks(data: Path, worker_pid: int, other_run: str = "run-2") -> dict[str, str]:
    """Each attack's command, run from a directory in DATA/work; `other_run` is another run's directory there."""
    return {
        "secret_key": f"grep -q {SECRET} ../../secret_key",
        "database": "head -c 15 ../../forge.sqlite3 | grep -q 'SQLite format'",
        "database_by_path": f"test -r {data / 'forge.sqlite3'}",
        "worker_environ": f"grep -qa PATH= /proc/{worker_pid}/environ",
        "other_run": f"cat ../{other_run}/notes.txt",
        "postgres_tcp": CONNECT.format(port=5432),
        "redis_tcp": CONNECT.format(port=6379),
        "postgres_socket": UNIX,
        "write_data_dir": f"touch {data / 'planted'}",
        "write_system": "touch /usr/local/planted",
        "fork_5000": FORK,
        "allocate_8gib": ALLOCATE,
    }


def lay_out(data: Path) -> Path:
    """A data folder with a secret key, a database and two runs; the first run's directory."""
    (data / "work" / "run-2").mkdir(parents=True)
    (data / "work" / "run-1").mkdir()
    (data / "secret_key").write_text(SECRET)
    (data / "forge.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(100))
    (data / "work" / "run-2" / "notes.txt").write_text("another run's notes")
    return data / "work" / "run-1"
