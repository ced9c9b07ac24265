"""A page holding the editor's YAML pane alone (console/editor/yaml_pane.js with the vendored CodeMirror), served
from a thread over HTTP under the console's own Content-Security-Policy: the pane's browser test and its bench
drive it without a console. `window.pane` is the pane; the page logs what its callbacks were told."""

from __future__ import annotations

import http.server
import importlib
import json
import secrets
import threading
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = {  # URL prefix -> folder, as collectstatic lays them out under /static/
    "/static/vendor/codemirror/": ROOT / "static/vendor/codemirror",
    "/static/console/editor/": ROOT / "forge/console/static/console/editor",
}
COMPLETIONS = {"agents": ["shell", "claude_code", "mock"], "library": ["review.code", "review.security"],
               "expressions": ["contains", "startswith", "endswith", "matches"]}

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>YAML pane</title>
<meta property="csp-nonce" nonce="{nonce}">
<style nonce="{nonce}">body {{ margin: 0; font: 14px sans-serif; }} #pane {{ height: 96vh; }}</style>
</head><body><div id="pane"></div>
<script type="module" nonce="{nonce}">
import {{ createYamlPane }} from "/static/console/editor/yaml_pane.js";
const schema = await (await fetch("/editor/schema.json")).json();
const text = await (await fetch("/text.yaml")).text();
window.told = {{ changes: 0, steps: [] }};
window.pane = createYamlPane(document.getElementById("pane"), {{ text, schema,
  onChange: () => {{ window.told.changes += 1; }}, onCursorStep: (id) => window.told.steps.push(id) }});
window.pane.setCompletions(schema["x-forge"].completions);
document.body.dataset.ready = "yes";
</script></body></html>
"""


@cache
def lobsterx_schema() -> dict:
    """The .lobsterX JSON Schema as GET /editor/schema.json gives it, completions included."""
    from engine.schema import lobsterx_schema as schema
    return {**schema(), "x-forge": {"completions": COMPLETIONS}}


def policy(nonce: str) -> str:
    """The console's Content-Security-Policy header (forge/settings.py) with this nonce."""
    settings = importlib.import_module("tests.settings")
    directives = settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]
    return "; ".join(f"{name} " + " ".join(f"'nonce-{nonce}'" if value == settings.NONCE else value
                                           for value in values) for name, values in directives.items())


class PanePage:
    """The page at `url`, showing `text` (set it before each load)."""

    def __init__(self, text: str = ""):
        self.text = text
        page = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                path = self.path.split("?")[0]
                if path == "/pane.html":
                    nonce = secrets.token_urlsafe(16)
                    return self.send(PAGE.format(nonce=nonce).encode(), "text/html", {
                        "Content-Security-Policy": policy(nonce)})
                if path == "/editor/schema.json":
                    return self.send(json.dumps(lobsterx_schema()).encode(), "application/json")
                if path == "/text.yaml":
                    return self.send(page.text.encode(), "text/plain; charset=utf-8")
                for prefix, folder in STATIC.items():
                    name = path.removeprefix(prefix)
                    if path.startswith(prefix) and "/" not in name and (folder / name).is_file():
                        return self.send((folder / name).read_bytes(), "text/javascript")
                if path == "/favicon.ico":
                    return self.send(b"", "image/x-icon", status=204)
                self.send(b"not found", "text/plain", status=404)

            def send(self, body: bytes, kind: str, headers: dict | None = None, status: int = 200):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/pane.html"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def open(self, browser_page, text: str) -> None:
        """Loads the page in `browser_page` with `text` in the pane; returns once the pane is there."""
        self.text = text
        browser_page.goto(self.url)
        browser_page.wait_for_selector("body[data-ready=yes] .cm-content", timeout=60_000)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def workflow(steps: int) -> str:
    """A valid document of `steps` steps in a chain, with the fields a real one has, and comments."""
    lines = ["# a long chain", "name: long_chain", "description: many steps", "steps:"]
    for i in range(steps):
        lines += [f"  - id: step_{i}  # the {i}th", "    agent: shell", f"    command: echo step {i}",
                  "    retry:", "      max_retries: 2", "    on_failure: halt"]
        if i:
            lines.append(f"    depends_on: [step_{i - 1}]")
    return "\n".join(lines) + "\n"
