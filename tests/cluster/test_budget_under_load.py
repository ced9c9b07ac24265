"""Twenty concurrent runs against an envelope that pays for ten steps: exactly ten run, nothing is overspent.

Each step costs 1.0 and says so in advance (its agent's estimated_cost); the
envelope's limit is 10.0. The steps hold their workers until every run has
been governed, so no spend is reported while the dispatches race: only
reservations taken at dispatch, under the envelope's lock, can stop the
eleventh.
"""

from __future__ import annotations

import pytest

from tests.cluster.load import RUNS, deploy, governed, queue_runs, release, spend, until, when_all_ended

pytestmark = pytest.mark.slow

ENVELOPE = ("from forge.governance.models import BudgetEnvelope\n"
            "BudgetEnvelope.objects.create(name='ten steps', scope='workflow:metered', limit=10.0)")


@pytest.fixture(params=["sqlite", "postgres"])
def load(request, tmp_path):
    # More workers than steps the envelope pays for: held steps never starve the rounds still to govern.
    deployed = deploy(tmp_path, request.param, workers=12)
    yield deployed
    deployed.close()


def test_twenty_concurrent_runs_against_an_envelope_for_ten_steps_run_exactly_ten_and_overspend_nothing(load):
    run_ids = queue_runs(load, "metered", setup=ENVELOPE)
    load.start_cluster()
    def every_run_governed():
        # ... while no step could end (or more than ten let through already, which no release can undo)
        counts = governed(load, run_ids)
        return counts if counts["governed_runs"] == RUNS or counts["allowed"] > 10 else None

    seen = until(load, every_run_governed, timeout=240, what="every run governed")
    release(load)
    ended = when_all_ended(load, run_ids)

    assert seen["allowed"] == 10, seen
    assert ended == {"completed None": 10, "failed budget_exceeded": 10}
    assert governed(load, run_ids)["started"] == 10
    assert spend(load, run_ids) == {"cost": 10.0, "reserved": 0.0}
