"""Isolated, pinned virtualenvs for the peer engines (Prefect, Dagster)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent

PINS = {
    # prefect 3.9 needs a certifi newer than the registry has; 3.8.8 + fastapi 0.154.0 installs and runs.
    "prefect": ["prefect==3.8.8", "fastapi==0.154.0"],
    "dagster": ["dagster==1.13.29"],
}


def venv_dir(peer: str) -> Path:
    """Where the peer's virtualenv lives."""
    return BENCH / f".venv-{peer}"


def ensure_venv(peer: str) -> Path:
    """Create (once) the peer's virtualenv with its pinned packages; return its python."""
    if peer not in PINS:
        raise ValueError(f"unknown peer {peer!r}; expected one of {sorted(PINS)}")
    root = venv_dir(peer)
    python = root / "bin" / "python"
    stamp = root / ".forge-installed"
    wanted = " ".join(PINS[peer])
    # The stamp records the pins so that changing a pin reinstalls.
    if stamp.exists() and stamp.read_text() == wanted and python.exists():
        return python
    if root.exists():
        shutil.rmtree(root)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    log = root / "install.log"
    with log.open("w") as out:
        cmd = [str(python), "-m", "pip", "install", *PINS[peer]]
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    if code:
        tail = "".join(log.read_text().splitlines(keepends=True)[-20:])
        raise RuntimeError(f"installing {peer} into {root} failed; last lines of {log}:\n{tail}")
    stamp.write_text(wanted)
    return python
