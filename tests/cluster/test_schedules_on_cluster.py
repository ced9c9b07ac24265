"""On a real deployment the clusters' clock fires due schedules: with two clusters ticking on one database each
due time starts one run, and a kill switch engaged from the command line stops them all until it is lifted."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.cluster.harness import now

pytestmark = pytest.mark.slow

SCHEDULES = 8
WORKFLOW = "name: scheduled_note\nsteps:\n  - {id: note, agent: mock, command: 'note for ${args.who}'}\n" \
           "args:\n  who: {type: string, required: true}\n"


def add_schedules(deployment, tmp_path, count: int) -> list[int]:
    path = tmp_path / "scheduled_note.yaml"
    path.write_text(WORKFLOW)
    saved = deployment.query("from pathlib import Path\nfrom forge.workflows.services import workflow_version_save\n"
                             f"result = workflow_version_save(user=None, source=Path({str(path)!r}).read_text()).number")
    assert saved == 1
    ids = []
    for i in range(count):
        # Once a year: after its one due time (moved into the past below) it is next due months away.
        added = deployment.forge("schedule", "add", "scheduled_note", "--cron", "0 0 1 1 *", "--arg", f"who=s{i}",
                                 "--json")
        assert added.returncode == 0, added.stderr
        ids.append(json.loads(added.stdout)["id"])
    return ids


def fall_due(deployment, ids: list[int], *, minutes_ago: int) -> None:
    """Move each schedule's due time into the past: the clock's next look finds them due."""
    past = now().replace(microsecond=0, second=0) - timedelta(minutes=minutes_ago)
    # SQLite compares Django's datetimes as text, so write them as Django does.
    value = past.strftime("%Y-%m-%d %H:%M:%S") if deployment.backend == "sqlite" else past
    for pk in ids:
        deployment.sql("UPDATE forge_schedules_schedule SET next_fire_at = %s WHERE id = %s", (value, pk))


def fires(deployment) -> list[tuple]:
    return deployment.sql("SELECT schedule_id, due_at, status, run_id FROM forge_schedules_schedulefire")


def scheduled_runs(deployment) -> dict[int, str]:
    return dict(deployment.sql("SELECT id, status FROM forge_runs_run"))


def test_two_clusters_fire_each_due_time_of_each_schedule_once(deployment, tmp_path):
    ids = add_schedules(deployment, tmp_path, SCHEDULES)
    fall_due(deployment, ids, minutes_ago=1)
    deployment.start_cluster()
    deployment.start_cluster()

    deployment.until(lambda: [f[2] for f in fires(deployment)] == ["dispatched"] * SCHEDULES, timeout=120,
                     what=f"{SCHEDULES} due times dispatched")
    runs = deployment.until(lambda: (r := scheduled_runs(deployment)) and set(r.values()) == {"completed"} and r,
                            timeout=120, what="the scheduled runs complete")

    recorded = fires(deployment)
    assert sorted(f[0] for f in recorded) == sorted(ids)  # one due time of each schedule
    assert sorted(runs) == sorted(f[3] for f in recorded)  # one run for each, and no other
    upcoming = deployment.sql("SELECT next_fire_at, last_dispatch_status FROM forge_schedules_schedule")
    assert all(when > now() and status == "dispatched" for when, status in upcoming), upcoming


def test_the_kill_switch_stops_every_schedule_and_lifting_it_lets_the_next_due_time_fire(deployment, tmp_path):
    ids = add_schedules(deployment, tmp_path, 2)
    engaged = deployment.forge("killswitch", "on", "--reason", "incident 42")
    assert engaged.returncode == 0, engaged.stderr
    fall_due(deployment, ids, minutes_ago=2)
    deployment.start_cluster()

    deployment.until(lambda: len(fires(deployment)) == 2, timeout=120, what="both due times decided")
    assert {f[2] for f in fires(deployment)} == {"kill_switch"}
    assert scheduled_runs(deployment) == {}

    lifted = deployment.forge("killswitch", "off")
    assert lifted.returncode == 0, lifted.stderr
    fall_due(deployment, ids[:1], minutes_ago=1)  # the next due time of one of them
    deployment.until(lambda: any(f[2] == "dispatched" for f in fires(deployment)), timeout=120,
                     what="the due time after the kill switch was lifted dispatched")
    assert len(fires(deployment)) == 3
    listing = deployment.forge("schedules")
    assert "last dispatched" in listing.stdout and "last kill_switch" in listing.stdout, listing.stdout
