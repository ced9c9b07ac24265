"""On a real deployment a schedule that requires approval fires on the clusters' clock: its run is held before
its first step until an approver decides from the command line; approved, it runs; rejected, it ends cancelled
(`start_rejected`) with no step run."""

from __future__ import annotations

import json

import pytest

from tests.cluster.test_schedules_on_cluster import WORKFLOW, fall_due, fires

pytestmark = pytest.mark.slow


def add_held_schedules(deployment, tmp_path, count: int) -> list[int]:
    path = tmp_path / "scheduled_note.yaml"
    path.write_text(WORKFLOW)
    deployment.query("from pathlib import Path\nfrom django.contrib.auth.models import Group, User\n"
                     "from forge.workflows.services import workflow_version_save\n"
                     f"workflow_version_save(user=None, source=Path({str(path)!r}).read_text())\n"
                     "april = User.objects.create_user('april', password='pw-april')\n"
                     "april.groups.add(Group.objects.get(name='Approvers'))\nresult = True")
    ids = []
    for i in range(count):
        added = deployment.forge("schedule", "add", "scheduled_note", "--cron", "0 0 1 1 *", "--arg", f"who=s{i}",
                                 "--require-approval", "--approver", "Approvers", "--json")
        assert added.returncode == 0, added.stderr
        row = json.loads(added.stdout)
        assert (row["require_approval"], row["approvers"]) == (True, ["Approvers"])
        ids.append(row["id"])
    return ids


def held(deployment) -> dict[int, tuple]:
    """Run -> (its status, its start approval's status, how many of its steps started)."""
    rows = deployment.sql("SELECT r.id, r.status, a.status, (SELECT count(*) FROM forge_runs_stepresult s "
                          "WHERE s.run_id = r.id AND s.started_at IS NOT NULL) FROM forge_runs_run r "
                          "JOIN forge_runs_approval a ON a.run_id = r.id AND a.kind = 'start' ORDER BY r.id")
    return {row[0]: row[1:] for row in rows}


def test_a_held_scheduled_run_waits_for_its_approver_then_runs_or_ends_when_rejected(deployment, tmp_path):
    ids = add_held_schedules(deployment, tmp_path, 2)
    fall_due(deployment, ids, minutes_ago=1)
    deployment.start_cluster()

    deployment.until(lambda: [f[2] for f in fires(deployment)] == ["dispatched"] * 2, timeout=120,
                     what="both due times dispatched")
    runs = deployment.until(lambda: (h := held(deployment)) and len(h) == 2 and h, timeout=120,
                            what="both runs held for approval")
    assert set(runs.values()) == {("running", "pending", 0)}  # no step has started
    listed = deployment.forge("approvals", "--user", "april")
    assert listed.returncode == 0, listed.stderr
    approved, rejected = sorted(runs)
    for run_id in runs:
        assert f"run {run_id} scheduled_note (start): Schedule #" in listed.stdout

    assert deployment.forge("approve", str(approved), "--user", "april").returncode == 0
    assert deployment.forge("reject", str(rejected), "--user", "april").returncode == 0
    deployment.until(lambda: held(deployment) == {approved: ("completed", "approved", 1),
                                                  rejected: ("cancelled", "rejected", 0)},
                     timeout=120, what="the approved run completed and the rejected one ended")
    (code,) = deployment.sql("SELECT error_code FROM forge_runs_run WHERE id = %s", (rejected,))[0]
    assert code == "start_rejected"
    again = deployment.forge("approve", str(rejected), "--user", "april")
    assert again.returncode == 2 and "is not held before its start" in again.stderr
