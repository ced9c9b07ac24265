"""Collecting a step's artifacts: what is kept, what is refused and why, and that nothing is ever followed."""

import hashlib
import os
import socket
import stat

import pytest

from engine import artifacts
from engine.artifacts import collect, pattern_problem

MiB = 1 << 20


def write(root, relative, data=b"x"):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def kept(collected):
    return [(k.path, k.size) for k in collected.kept]


def refused(collected):
    return {r.path: r.reason for r in collected.refused}


def test_globs_keep_the_matching_files_with_size_and_digest(tmp_path):
    write(tmp_path, "report/a.pdf", b"%PDF-1")
    write(tmp_path, "report/b.pdf", b"%PDF-22")
    write(tmp_path, "report/notes.txt")
    write(tmp_path, "out.json", b"{}")
    write(tmp_path, "deep/x/y/trace.log", b"log")
    write(tmp_path, ".hidden.json", b"[]")
    result = collect(tmp_path, ["report/*.pdf", "out.json", "**/*.log", "*.json", "missing/*"],
                     max_file_bytes=MiB, budget_bytes=10 * MiB)
    assert kept(result) == [(".hidden.json", 2), ("deep/x/y/trace.log", 3), ("out.json", 2), ("report/a.pdf", 6),
                            ("report/b.pdf", 7)]
    assert result.kept[3].sha256 == hashlib.sha256(b"%PDF-1").hexdigest()
    assert result.refused == [] and result.total_bytes == 20
    assert result.to_json()["kept"][2] == {"path": "out.json", "size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()}


def test_the_copies_hold_exactly_the_bytes_reported(tmp_path):
    root, into = tmp_path / "run", tmp_path / "copies"
    write(root, "report/a.pdf", b"%PDF-1")
    into.mkdir()
    result = collect(root, ["report/*"], max_file_bytes=MiB, budget_bytes=MiB, into=into)
    [item] = result.kept
    assert item.copy == into / "report" / "a.pdf"
    assert hashlib.sha256(item.copy.read_bytes()).hexdigest() == item.sha256
    assert sorted(p.name for p in (into / "report").iterdir()) == ["a.pdf"]  # no partial copy left behind


def test_a_symbolic_link_is_refused_and_never_followed(tmp_path):
    root = tmp_path / "run"
    secret = write(tmp_path, "outside/secret.txt", b"secret")
    write(root, "ok.txt")
    (root / "link.txt").symlink_to(secret)
    (root / "dirlink").symlink_to(secret.parent, target_is_directory=True)
    (root / "dangling.txt").symlink_to(tmp_path / "nothing")
    result = collect(root, ["*.txt", "dirlink/*"], max_file_bytes=MiB, budget_bytes=MiB)
    assert kept(result) == [("ok.txt", 1)]
    assert refused(result) == {"dangling.txt": "a symbolic link, never followed",
                               "dirlink": "a symbolic link, never followed",
                               "link.txt": "a symbolic link, never followed"}


def test_a_pattern_reaching_through_a_linked_parent_directory_is_refused(tmp_path):
    root = tmp_path / "run"
    write(tmp_path, "outside/report/secret.pdf")
    root.mkdir()
    (root / "report").symlink_to(tmp_path / "outside" / "report", target_is_directory=True)
    result = collect(root, ["report/*.pdf", "**/*.pdf"], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and refused(result) == {"report": "a symbolic link, never followed"}


def test_a_hard_link_to_a_file_is_refused(tmp_path):
    root = tmp_path / "run"
    outside = write(tmp_path, "secret.txt", b"secret")
    root.mkdir()
    os.link(outside, root / "copy.txt")
    result = collect(root, ["*.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and "hard link" in refused(result)["copy.txt"]


def test_a_fifo_and_a_socket_are_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.out")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.out"))
    try:
        result = collect(tmp_path, ["*.out"], max_file_bytes=MiB, budget_bytes=MiB)
    finally:
        server.close()
    assert refused(result) == {"pipe.out": "a fifo, not a regular file", "sock.out": "a socket, not a regular file"}


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_device_is_refused(tmp_path):
    os.mknod(tmp_path / "zero.out", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    result = collect(tmp_path, ["*.out"], max_file_bytes=MiB, budget_bytes=MiB)
    assert refused(result) == {"zero.out": "a device, not a regular file"}


@pytest.mark.parametrize("pattern", ["/etc/passwd", "../outside/*", "report/../../x", "~/x", "a\\b", "", "  ", 3])
def test_a_pattern_outside_the_directory_is_refused_whole(tmp_path, pattern):
    write(tmp_path, "run/x")
    write(tmp_path, "outside/x")
    result = collect(tmp_path / "run", [pattern], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and len(result.refused) == 1
    assert result.refused[0].reason.startswith("refused pattern: it must")
    assert pattern_problem(pattern) is not None


@pytest.mark.parametrize("pattern", ["out.json", "./out.json", "report/*.pdf", "**/*.log", "a/**/b?.[ch]", "x..y"])
def test_a_relative_glob_is_a_good_pattern(pattern):
    assert pattern_problem(pattern) is None


def test_the_bounds_per_file_and_per_run(tmp_path):
    write(tmp_path, "a.bin", b"a" * 10)
    write(tmp_path, "b.bin", b"b" * 11)
    write(tmp_path, "c.bin", b"c" * 8)
    write(tmp_path, "d.bin", b"d" * 2)
    result = collect(tmp_path, ["*.bin"], max_file_bytes=10, budget_bytes=14)
    assert kept(result) == [("a.bin", 10), ("d.bin", 2)]
    assert refused(result) == {"b.bin": "larger than 10 bytes, the bound for one artifact",
                               "c.bin": "over the run's bound for artifacts (4 bytes were left)"}


def test_a_file_that_grows_while_it_is_read_is_refused_after_reading_at_most_the_bound(tmp_path, monkeypatch):
    write(tmp_path, "grows.bin", b"g" * 4)
    real_fstat, reads = os.fstat, []

    def stale_fstat(fd):  # the size it had when looked at; it grew to 4 bytes after
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 3, *info[7:]))

    real_read = os.read
    monkeypatch.setattr(artifacts.os, "fstat", stale_fstat)
    monkeypatch.setattr(artifacts.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    result = collect(tmp_path, ["*.bin"], max_file_bytes=3, budget_bytes=MiB, into=tmp_path / "copies")
    assert result.kept == [] and refused(result) == {"grows.bin": "grew past 3 bytes while it was read"}
    assert sum(reads) <= 4 and list((tmp_path / "copies").iterdir()) == []


def test_a_name_swapped_for_a_link_after_the_listing_is_refused(tmp_path, monkeypatch):
    write(tmp_path, "swap.txt", b"mine")
    secret = write(tmp_path.parent / f"{tmp_path.name}-outside", "secret.txt", b"secret")
    real_open = os.open

    def swapping_open(name, flags, *args, dir_fd=None, **kwargs):
        if name == "swap.txt":
            os.unlink(tmp_path / "swap.txt")
            os.symlink(secret, tmp_path / "swap.txt")
        return real_open(name, flags, *args, dir_fd=dir_fd, **kwargs)

    monkeypatch.setattr(artifacts.os, "open", swapping_open)
    result = collect(tmp_path, ["*.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and refused(result) == {"swap.txt": "a symbolic link, never followed"}


def test_a_directory_named_without_a_wildcard_is_refused_and_one_matched_by_a_wildcard_is_passed_over(tmp_path):
    write(tmp_path, "out/a.txt")
    write(tmp_path, "logs/b.txt")
    result = collect(tmp_path, ["out", "*"], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and refused(result) == {"out": "a directory (name its files, e.g. dir/**)"}


def test_a_name_that_is_not_utf8_is_refused(tmp_path):
    os.close(os.open(os.fsencode(tmp_path) + b"/bad\xff.txt", os.O_CREAT | os.O_WRONLY))
    result = collect(tmp_path, ["*.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert result.kept == [] and refused(result) == {"bad\ufffd.txt": "a name that is not UTF-8"}


def test_the_walk_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "MAX_ENTRIES", 5)
    for n in range(8):
        write(tmp_path, f"f{n}.txt")
    result = collect(tmp_path, ["*.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert len(result.kept) == 5 and "more than 5 entries" in result.refused[0].reason


# -- the local runner lists what shell steps kept ------------------------------------------------------------------


def test_the_local_runner_lists_each_steps_artifacts_in_its_report(tmp_path):
    from engine.report import report
    from engine.runner import LocalRunner
    from engine.validation import load_workflow

    outside = write(tmp_path, "outside/secret.txt", b"secret")
    workflow = load_workflow(f"""
name: keep
steps:
  - id: build
    agent: shell
    command: "mkdir -p report && printf pdf > report/a.pdf && printf '{{}}' > out.json && ln -s {outside} link.json"
    artifacts: ["report/*.pdf", "*.json"]
  - id: later
    agent: shell
    command: "cat report/a.pdf"
    depends_on: [build]
  - id: nothing
    agent: shell
    command: "true"
    artifacts: ["missing/*"]
""")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcome = LocalRunner(workflow, fast=True, workdir=str(run_dir)).run()
    steps = report(outcome)["steps"]
    assert steps["later"]["stdout"] == "pdf" and "artifacts" not in steps["later"]  # the directory is shared
    assert steps["build"]["artifacts"] == {
        "kept": [{"path": "out.json", "size": 2, "sha256": hashlib.sha256(b"{}").hexdigest(), "attempt": 1},
                 {"path": "report/a.pdf", "size": 3, "sha256": hashlib.sha256(b"pdf").hexdigest(), "attempt": 1}],
        "refused": [{"path": "link.json", "reason": "a symbolic link, never followed", "attempt": 1}]}
    assert steps["nothing"]["artifacts"] == {"kept": [], "refused": []}


def test_the_kept_files_the_refusals_the_depth_and_the_path_length_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "MAX_KEPT", 3)
    monkeypatch.setattr(artifacts, "MAX_REFUSED", 2)
    monkeypatch.setattr(artifacts, "MAX_DEPTH", 2)
    for n in range(5):
        write(tmp_path, f"f{n}.txt")
    for n in range(4):
        (tmp_path / f"l{n}.txt").symlink_to(tmp_path / "f0.txt")
    write(tmp_path, "a/b/c/deep.txt")
    result = collect(tmp_path, ["*.txt", "**/deep.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert [k.path for k in result.kept] == ["f0.txt", "f1.txt", "f2.txt"]
    assert [r.path for r in result.refused] == ["a/b/c", "f3.txt", "."]
    assert result.refused[0].reason == "nested deeper than 2 directories; not looked into"
    assert result.refused[-1].reason == "5 more matches were refused; the first 2 are listed"


def test_a_path_longer_than_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "MAX_PATH_CHARS", 20)
    write(tmp_path, "short.txt")
    write(tmp_path, "d" * 15 + "/long-name.txt")
    result = collect(tmp_path, ["**/*.txt"], max_file_bytes=MiB, budget_bytes=MiB)
    assert kept(result) == [("short.txt", 1)]
    assert result.refused == [artifacts.Refused("d" * 15 + "/lon…", "a path longer than 20 characters")]
