"""max_concurrency: 2 holds on PostgreSQL across twenty concurrent runs: never three steps running at once.

The twenty runs' first rounds race on several workers. Each step holds its
worker until the test releases it, and a gauge counts how many are inside at
once, so any dispatch let through by a count read before another round's
commit shows as a third step inside.
"""

from __future__ import annotations

import pytest

from tests.cluster.load import RUNS, deploy, gauge, governed, queue_runs, release, until, when_all_ended

pytestmark = pytest.mark.slow

TWO_SLOTS = ("from forge.governance.models import Agent\n"
             "Agent.objects.filter(name='held').update(max_concurrency=2)")


@pytest.fixture
def load(tmp_path):
    deployed = deploy(tmp_path, "postgres", workers=8)
    yield deployed
    deployed.close()


def test_max_concurrency_two_never_has_three_steps_running_across_twenty_concurrent_runs(load):
    run_ids = queue_runs(load, "gauged", setup=TWO_SLOTS)
    load.start_cluster()
    def both_slots_held_and_every_run_governed():
        # (or a third step inside already, which no release can undo)
        counts = governed(load, run_ids)
        return counts["peak"] > 2 or (counts["inside"] == 2 and counts["governed_runs"] == RUNS)

    until(load, both_slots_held_and_every_run_governed, timeout=240, what="both slots held, every run governed")
    release(load)
    ended = when_all_ended(load, run_ids)

    counts = gauge(load)
    assert counts["peak"] == 2, counts
    assert set(ended) <= {"completed None", "failed agent_busy"}, ended
    assert ended.get("completed None", 0) == counts["started"] >= 2
