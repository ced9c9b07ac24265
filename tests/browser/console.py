"""A real console for browser tests: a deployment (tests/cluster/harness.py) with its cluster, daphne in front
of it, and the cast of people with passwords, driven by Debian's Chromium through Playwright."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from tests.cluster.harness import Deployment

PEOPLE = {"olive": ("Operators",), "april": ("Approvers",), "adam": ("Admins",), "otto": ()}
PASSWORD = "pw-{}-console"
CHROMIUM = "/usr/bin/chromium"
# Each Content-Security-Policy violation a page meets, told to the test as it happens (Chromium's console says it
# too, also for a resource it refused before any script could listen).
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => window.forgeCspViolation(
  `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber} (${e.sample})`));
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Console:
    def __init__(self, deployment: Deployment, shots: Path):
        self.deployment = deployment
        self.shots = shots
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.daphne: subprocess.Popen | None = None
        self.contexts: list = []  # the browser contexts its people logged in with, closed by close()
        self.violations: list[str] = []  # of the Content-Security-Policy, in any of them
        deployment.env.update({"FORGE_SSL_REDIRECT": "0", "FORGE_SECURE_COOKIES": "0"})
        deployment.collect_static()
        deployment.query("from django.contrib.auth.models import Group, User\n" + "".join(
            f"u = User.objects.create_user({name!r}, password={PASSWORD.format(name)!r}, is_staff={name == 'adam'})\n"
            + "".join(f"u.groups.add(Group.objects.get(name={group!r}))\n" for group in groups)
            for name, groups in PEOPLE.items()) + "result = True")
        deployment.start_cluster()
        self.start_daphne()

    def start_daphne(self) -> None:
        self.daphne = self.deployment.start_daphne(self.port)

    def restart_daphne(self) -> None:
        self.deployment.kill(self.daphne)
        self.start_daphne()

    def login(self, browser, name: str):
        """A new browser context logged in as `name` through the login form; its page."""
        return self.login_in(browser.new_context(viewport={"width": 1400, "height": 1000}), name)

    def login_in(self, context, name: str):
        """A page of `context` logged in as `name` through the login form."""
        if context not in self.contexts:
            self.contexts.append(context)
            context.expose_function("forgeCspViolation", lambda said: self.violations.append(f"{name}: {said}"))
            context.add_init_script(REPORT_VIOLATIONS)
            context.on("console", lambda message: self._console(name, message))
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(self.url + "/login/")
        page.fill("#id_username", name)
        page.fill("#id_password", PASSWORD.format(name))
        page.click("button[type=submit]")
        page.wait_for_load_state()
        return page

    def _console(self, name: str, message) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.violations.append(f"{name}: {message.text}")

    def csp_violations(self) -> list[str]:
        """Every violation reported so far, once each page has run the tasks already queued (a report is one)."""
        for context in self.contexts:
            for page in context.pages:
                if not page.is_closed():
                    page.evaluate("() => new Promise((done) => setTimeout(done))")
        return self.violations

    def close(self) -> None:
        for context in self.contexts:
            context.close()
        self.deployment.close()

    def shot(self, page, name: str) -> Path:
        path = self.shots / f"{name}.png"
        # caret="initial": Playwright's default hides the caret by injecting a style into the page, a change of the
        # document that an htmx swap under way can race with; the caret in a picture harms nothing.
        page.screenshot(path=str(path), full_page=True, caret="initial")
        return path
