"""A fake gateway, a real HTTP server on 127.0.0.1 that can go down (its port refuses) and come up on the same
port, and the workflow the gateway tests route through it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A step for the http agent `routed`, which needs a gateway with a GPU and is done when the gateway says so.
WORKFLOW = """
name: routed
steps:
  - id: work
    agent: routed
    command: "train the model"
    timeout: 60
    capabilities: [gpu]
    outputs: {done: {type: boolean}}
"""


class FakeGateway:
    """A gateway on 127.0.0.1 that answers dispatches with `reply`, its health URL with 200, and records cancels."""

    def __init__(self, name: str):
        self.name = name
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.seen: list[tuple[str, str, dict, dict]] = []  # (method, path, headers, body)
        self.reply = lambda body: (200, {"ok": True, "outputs": {"done": True}})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self, method: str = "POST") -> list[str]:
        return [path for seen_method, path, _, _ in self.seen if seen_method == method]

    def up(self) -> FakeGateway:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                gateway.seen.append(("GET", self.path, dict(self.headers), {}))
                self.answer(200, {"status": "ok"})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                gateway.seen.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.answer(*((200, {"cancelled": True}) if self.path == "/cancel" else gateway.reply(body)))

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def down(self) -> None:
        """Stop listening: a connection to the port is refused from now on."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
