"""Run a peer engine's workflow shapes in its own virtualenv and return the figures."""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from peers.venvs import ensure_venv
else:
    from .venvs import ensure_venv

HERE = Path(__file__).resolve().parent
SCRIPTS = {"prefect": HERE / "prefect_shapes.py", "dagster": HERE / "dagster_shapes.py"}


def run_peer(peer: str, n: int, shapes: list[str], timeout: float = 1800) -> dict:
    """Ensure the peer's venv, run its shape script, and return the parsed JSON figures."""
    if peer not in SCRIPTS:
        raise ValueError(f"unknown peer {peer!r}; expected one of {sorted(SCRIPTS)}")
    python = ensure_venv(peer)
    cmd = [str(python), str(SCRIPTS[peer]), "--n", str(n), "--shapes", ",".join(shapes)]
    # stderr passes through so the peer's progress and errors stay visible; own session so a
    # timeout also ends Prefect's ephemeral server subprocess.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGINT first so the script's exit hooks remove its temporary home.
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise
    if proc.returncode:
        raise RuntimeError(f"{peer} shapes exited {proc.returncode}: {out[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("peer", choices=sorted(SCRIPTS))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--shapes", default="chain,fanout")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()
    print(json.dumps(run_peer(a.peer, a.n, a.shapes.split(","), a.timeout)))
