"""The console's whole suite again, on PostgreSQL: the runtime writes its rounds in SQL of its own
(forge/runs/store.py), so what passes on SQLite must pass on the production database too. The pass itself runs
beside the rest of the suite (tests/cluster/postgres_pass.py); this test waits for its verdict."""

from tests.cluster import postgres_pass

# The deadline only stops a hung suite: CI's machine may be slow and busy (the pass takes minutes unloaded).
DEADLINE_S = 3600


def test_the_console_suite_passes_on_postgresql():
    assert postgres_pass.running is not None, "the pass starts when collection ends (tests/cluster/conftest.py)"
    code, output = postgres_pass.running.wait(DEADLINE_S)
    lines = output.strip().splitlines()
    summary = lines[-1] if lines else ""
    assert code == 0, output[-6000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
