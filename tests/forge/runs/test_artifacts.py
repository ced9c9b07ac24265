"""Artifacts (spec 15) through the console's runtime: a shell step's `artifacts` keep the files it leaves in the
run's directory, bounded, with its attempt; a link, a device or a file over the bound is refused and never
followed; the directory is shared by the run's steps; an attempt that runs again keeps one set.

Transactional database: runs advance on commit, and their shell steps run in the worker (django-q2 sync), as in
the cluster.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from forge.runs import artifacts, services
from forge.runs.models import Artifact, RunEvent, StepResult
from forge.runtime.execution import workdir
from tests.artifact_workflow import keeps
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BOUND = 1000  # bytes per file in these tests

KEEPS = keeps("keeps", big_bytes=2 * BOUND)


@pytest.fixture
def stores(settings, tmp_path):
    settings.FORGE_WORKDIR = tmp_path / "work"
    settings.FORGE_ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.FORGE_ARTIFACT_MAX_BYTES = BOUND
    return settings.FORGE_ARTIFACTS_DIR


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def refusals(run, step="build") -> dict[str, str]:
    return {e.data["path"]: e.data["reason"] for e in RunEvent.objects.filter(run=run, kind="artifact_refused",
                                                                              step=step)}


def test_a_shell_steps_files_are_kept_and_links_devices_and_oversized_files_refused(operator, save_workflow,
                                                                                      stores):
    run = services.run_start(user=operator, version=save_workflow(KEEPS))

    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "completed", (steps["build"].error, steps["read"].error)
    kept = [(a.step, a.attempt, a.iteration, a.path, a.size, a.sha256) for a in Artifact.objects.filter(run=run)]
    assert kept == [("build", 1, 0, "out.txt", 5, sha(b"hello")),
                    ("build", 1, 0, "report/summary.txt", 11, sha(b"deep inside"))]
    for artifact in Artifact.objects.filter(run=run):
        with artifacts.open_stored(artifact) as stored:
            assert sha(stored.read()) == artifact.sha256
        assert Path(stores, artifact.stored).resolve().is_relative_to(Path(stores).resolve())
    refused = refusals(run)
    assert set(refused) == {"passwd.txt", "big.bin", "pipe.txt"}
    assert "symbolic link" in refused["passwd.txt"]
    assert f"larger than {BOUND} bytes" in refused["big.bin"]
    assert "fifo" in refused["pipe.txt"]
    assert all("root:" not in Path(stores, a.stored).read_text() for a in Artifact.objects.filter(run=run))
    # The run's directory is shared: the next step read what the first one wrote, and it is still there.
    assert steps["read"].stdout == "hellodeep inside"
    assert (Path(workdir(run.pk)) / "report" / "summary.txt").read_text() == "deep inside"
    assert list(artifacts.artifacts_of(run, "build").values_list("path", flat=True)) == ["out.txt",
                                                                                        "report/summary.txt"]


BOUNDED_RUN = """
name: bounded_run
steps:
  - id: first
    agent: shell
    command: head -c 600 /dev/zero > a.bin
    artifacts: [a.bin]
  - id: second
    agent: shell
    command: head -c 600 /dev/zero > b.bin
    artifacts: [b.bin]
    depends_on: [first]
"""


def test_a_run_keeps_at_most_its_bound_in_all(operator, save_workflow, stores, settings):
    settings.FORGE_ARTIFACT_RUN_MAX_BYTES = 1000
    run = services.run_start(user=operator, version=save_workflow(BOUNDED_RUN))

    run.refresh_from_db()
    assert run.status == "completed"
    assert list(Artifact.objects.filter(run=run).values_list("step", "path")) == [("first", "a.bin")]
    assert "over the run's bound for artifacts (400 bytes were left)" in refusals(run, "second")["b.bin"]


LOOPED = """
name: looped
steps:
  - id: grow
    agent: shell
    command: echo x >> log.txt; cat log.txt | wc -l
    artifacts: [log.txt]
    loop: {max_iterations: 3, until: "output.contains('3')"}
"""


def test_each_loop_iteration_keeps_its_own_files_from_the_one_directory(operator, save_workflow, stores):
    run = services.run_start(user=operator, version=save_workflow(LOOPED))

    run.refresh_from_db()
    assert run.status == "completed", steps_of(run)["grow"].error
    kept = [(a.iteration, a.size) for a in Artifact.objects.filter(run=run, step="grow")]
    assert kept == [(1, 2), (2, 4), (3, 6)]  # the directory was kept between the iterations


def test_keeping_an_attempt_again_leaves_one_set_and_a_stale_worker_keeps_nothing(operator, save_workflow, stores):
    run = services.run_start(user=operator, version=save_workflow(KEEPS))
    run.refresh_from_db()
    row = StepResult.objects.get(run=run, step="read")
    directory = Path(workdir(run.pk))
    # The attempt of `read` runs again after its worker died (same attempt, same fence: the row's).
    (directory / "again.txt").write_text("second run")
    keep = dict(run_id=run.pk, step="read", attempt=row.attempt, iteration=row.iteration, patterns=["again.txt"],
                workdir=str(directory))
    for _ in range(2):
        artifacts.keep(fence=row.fence, **keep)
    assert list(Artifact.objects.filter(run=run, step="read").values_list("path", "sha256")) == [
        ("again.txt", sha(b"second run"))]
    (directory / "again.txt").write_text("changed")
    (directory / "later.txt").write_text("later")
    artifacts.keep(fence=row.fence, **{**keep, "patterns": ["later.txt"]})
    assert list(Artifact.objects.filter(run=run, step="read").values_list("path", flat=True)) == ["later.txt"]
    # A worker whose attempt was taken over (an older fence) writes nothing.
    assert artifacts.keep(fence=row.fence - 1, **{**keep, "patterns": ["again.txt"]}) == []
    assert list(Artifact.objects.filter(run=run, step="read").values_list("path", flat=True)) == ["later.txt"]


def test_a_run_directory_swapped_for_a_link_is_not_followed(operator, save_workflow, stores, tmp_path):
    run = services.run_start(user=operator, version=save_workflow(KEEPS))
    run.refresh_from_db()
    row = StepResult.objects.get(run=run, step="read")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("not the run's")
    swapped = tmp_path / "swapped"
    swapped.symlink_to(elsewhere, target_is_directory=True)

    kept = artifacts.keep(run_id=run.pk, step="read", attempt=row.attempt, iteration=row.iteration, fence=row.fence,
                          patterns=["*.txt"], workdir=str(swapped))

    assert kept == [] and not Artifact.objects.filter(run=run, step="read").exists()
    assert "symbolic link" in refusals(run, "read")["."]


def test_a_store_that_fails_is_said_and_the_steps_result_still_counts(operator, save_workflow, stores, settings,
                                                                     tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store should be")
    settings.FORGE_ARTIFACTS_DIR = blocker
    run = services.run_start(user=operator, version=save_workflow(KEEPS))

    run.refresh_from_db()
    assert run.status == "completed"
    assert not Artifact.objects.filter(run=run).exists()
    assert "could not be stored" in refusals(run)["*.txt, report/*.txt, big.bin, missing.pdf"]


MANY_LINKS = """
name: many_links
steps:
  - id: spray
    agent: shell
    command: |
      mkdir -p l
      echo x >> n.txt
      n=$(wc -l < n.txt)
      for i in 1 2 3 4; do ln -s /etc/passwd "l/$n-$i"; done
      echo "$n"
    artifacts: ["l/*"]
    loop: {max_iterations: 3, until: "output.contains('3')"}
"""


def test_a_run_lists_a_bounded_number_of_refusals_and_counts_the_rest(operator, save_workflow, stores,
                                                                     monkeypatch):
    """Each collection may list 100 refusals, times every attempt and loop iteration: past the run's bound, a
    collection's refusals are one event that counts them."""
    monkeypatch.setattr(artifacts, "RUN_REFUSALS", 3)

    run = services.run_start(user=operator, version=save_workflow(MANY_LINKS))

    run.refresh_from_db()
    assert run.status == "completed", steps_of(run)["spray"].error
    said = [(e.data["iteration"], e.data["path"], e.data["reason"])
            for e in RunEvent.objects.filter(run=run, kind="artifact_refused").order_by("id")]
    bound = "over the run's bound of 3 refusals listed"
    # The directory is shared: iteration 1 matches 4 links, iteration 2 matches 8, iteration 3 matches 12.
    assert [path for _, path, _ in said[:3]] == ["l/1-1", "l/1-2", "l/1-3"]
    assert all("symbolic link" in reason for _, _, reason in said[:3])
    assert said[3:] == [(1, ".", f"1 more matches not kept, {bound}"), (2, ".", f"8 more matches not kept, {bound}"),
                        (3, ".", f"12 more matches not kept, {bound}")]
    assert not Artifact.objects.filter(run=run).exists()
