"""Artifacts (spec 15) on a real cluster, on SQLite and on PostgreSQL + Redis: a shell step's files are kept and
refused as the local runner lists them (a link, a fifo and a file over the bound refused, a file in a
subdirectory kept), the kept bytes are stored under FORGE_ARTIFACTS_DIR by their digest, and the next step reads the
run's directory."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from tests.artifact_workflow import keeps
from tests.cluster.harness import ROOT, Deployment

pytestmark = pytest.mark.slow

WORKFLOW = keeps("cluster_keeps", big_bytes=11_000_000)  # over the default bound, 10 MiB


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_shell_steps_artifacts_are_kept_as_the_local_runner_lists_them(tmp_path, backend):
    path = tmp_path / "cluster_keeps.yaml"
    path.write_text(WORKFLOW, encoding="utf-8")
    local = subprocess.run([sys.executable, "-m", "engine", "run", str(path), "--json", "--fast"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    expected = json.loads(local.stdout)
    deployment = Deployment(tmp_path / "data", backend)
    try:
        deployment.start_cluster()
        done = deployment.forge("run", str(path), "--wait", "--json", "--timeout", "120")
        assert done.returncode == 0, done.stderr
        actual = json.loads(done.stdout)
        stored = deployment.sql("SELECT path, sha256, stored FROM forge_runs_artifact ORDER BY path")
    finally:
        deployment.close()

    assert actual["steps"]["build"]["artifacts"] == expected["steps"]["build"]["artifacts"]
    listed = actual["steps"]["build"]["artifacts"]
    assert [(k["path"], k["size"]) for k in listed["kept"]] == [("out.txt", 5), ("report/summary.txt", 11)]
    assert {r["path"] for r in listed["refused"]} == {"passwd.txt", "big.bin", "pipe.txt"}
    assert actual["steps"]["read"]["stdout"].strip() == "hellodeep inside"
    for _, sha256, name in stored:
        data = (tmp_path / "data" / "artifacts" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha256
    assert [p for p, _, _ in stored] == ["out.txt", "report/summary.txt"]
