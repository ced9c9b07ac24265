"""Settings come from the environment; `check --deploy` is clean with DEBUG off, and unsafe queue timing is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FORGE_", "DJANGO_"))}
    environ.update({"DJANGO_SETTINGS_MODULE": "forge.settings", "FORGE_DATA_DIR": str(tmp_path),
                    "FORGE_SECRET_KEY": "x7" * 30 + "-production-like-secret", **env})
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_when_debug_is_off(tmp_path):
    done = manage("check", "--deploy", "--fail-level", "WARNING", tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_a_missing_secret_key_is_refused_when_debug_is_off(tmp_path):
    done = manage("check", tmp_path=tmp_path, FORGE_SECRET_KEY="")
    assert done.returncode != 0
    assert "FORGE_SECRET_KEY" in done.stderr


def test_a_queue_retry_shorter_than_the_longest_step_is_refused(tmp_path):
    done = manage("check", tmp_path=tmp_path, FORGE_STEP_TIMEOUT_MAX_S="600", FORGE_TASK_RETRY_S="300")
    assert done.returncode != 0
    assert "forge.E002" in done.stderr


def test_a_bad_boolean_in_the_environment_fails_loudly(tmp_path):
    done = manage("check", tmp_path=tmp_path, FORGE_DEBUG="maybe")
    assert done.returncode != 0
    assert "FORGE_DEBUG='maybe' is not a boolean" in done.stderr


def test_the_key_bin_serve_keeps_in_the_data_folder_is_used_without_one_in_the_environment(tmp_path):
    """`forge` in a second terminal, next to a console started by bin/serve, finds the same key."""
    (tmp_path / "secret_key").write_text("kept-" + "k9" * 30 + "\n")
    done = manage("shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)", tmp_path=tmp_path,
                  FORGE_SECRET_KEY="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "kept-" + "k9" * 30
