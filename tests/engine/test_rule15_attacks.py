"""Spec 15 read by an attacker: a workflow's author and a gateway try to stall what collects artifacts and
measures health."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from engine.artifacts import collect
from engine.executors.health import check_health


def test_artifacts_glob_of_many_double_stars_does_not_stall_the_collection(tmp_path):
    """`**/**/.../x` over a deep directory tried every way to split the path (exponential): a worker hung in it."""
    deep = tmp_path.joinpath(*(["d"] * 30))
    deep.mkdir(parents=True)
    (deep / "y").write_text("no match")
    (deep / "x").write_text("match")
    started = time.monotonic()
    got = collect(tmp_path, ["/".join(["**"] * 40 + ["x"]), "/".join(["**", "*"] * 20 + ["z"])],
                  max_file_bytes=1 << 20, budget_bytes=1 << 20)
    assert time.monotonic() - started < 10
    assert [kept.path for kept in got.kept] == ["/".join(["d"] * 30 + ["x"])]


def test_artifacts_globs_still_match_as_documented(tmp_path):
    (tmp_path / "report" / "a").mkdir(parents=True)
    for name in ("report/one.pdf", "report/a/two.pdf", "top.pdf", "report/a/note.txt"):
        (tmp_path / name).write_text(name)
    got = collect(tmp_path, ["report/**/*.pdf", "*.pdf"], max_file_bytes=1 << 20, budget_bytes=1 << 20)
    assert [kept.path for kept in got.kept] == ["report/a/two.pdf", "report/one.pdf", "top.pdf"]
    got = collect(tmp_path, ["**"], max_file_bytes=1 << 20, budget_bytes=1 << 20)
    assert len(got.kept) == 4


@pytest.fixture
def dripping_server():
    """A health URL on 127.0.0.1 whose answer comes one byte at a time, each just inside the read timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.2)
                try:
                    conn.recv(4096)
                    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000:
                        if stop.wait(0.15):
                            break
                        conn.sendall(bytes([byte]))
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


def test_a_health_url_that_drips_its_answer_is_bounded_by_the_probe_timeout(dripping_server):
    """Each read was bounded, not the exchange: a gateway sending a byte every 0.15 s held the probe (and the
    worker running it) for as long as it liked."""
    port = dripping_server
    started = time.monotonic()
    error = check_health(f"http://127.0.0.1:{port}/health", timeout_s=1.0, egress_allow=[f"127.0.0.1:{port}"])
    took = time.monotonic() - started
    assert took < 5, took
    assert error is not None and "within 1 s" in error
