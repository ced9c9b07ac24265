"""A real local HTTP server for the http and openai agents to call, and the gateway fixtures."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pytest


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body.decode("utf-8"))


@dataclass
class LocalServer:
    """What the server answers (`reply(seen) -> (status, body)`) and every request it saw."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    reply: Callable[[Seen], tuple[int, object]] = lambda seen: (202, {"accepted": True})


@pytest.fixture
def local_server(settings):
    """The server, which agents may reach: its loopback host:port is in FORGE_EGRESS_ALLOW for the test."""
    with serving() as state:
        settings.FORGE_EGRESS_ALLOW = settings.FORGE_EGRESS_ALLOW | {state.url.removeprefix("http://")}
        yield state


@contextmanager
def serving():
    """A LocalServer listening on 127.0.0.1 until the block ends (agents reach it once FORGE_EGRESS_ALLOW has it)."""
    state = LocalServer()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
            with lock:
                state.seen.append(seen)
            status, body = state.reply(seen)
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
