import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.browser.console import CHROMIUM, Console
from tests.cluster.harness import Deployment, Gates


@pytest.fixture(scope="module")
def browser():
    """Chromium, its own stderr logged by Playwright's driver (DEBUG=pw:browser): pytest shows it beside a failing
    test, so a renderer that crashes ("Target crashed") says why."""
    was = os.environ.get("DEBUG")
    os.environ["DEBUG"] = "pw:browser"  # read once, as the driver starts; the consoles started later never see it
    try:
        playwright = sync_playwright().start()
    finally:
        if was is None:
            del os.environ["DEBUG"]
        else:
            os.environ["DEBUG"] = was
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()
    finally:
        playwright.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def console(request, tmp_path):
    """A console on the embedded default, then on PostgreSQL + Redis; screenshots go to FORGE_SCREENSHOTS or
    the test's folder. A test whose pages met any Content-Security-Policy violation fails at teardown.
    `console.gates` holds python steps running tests.cluster.callables.gated until the test opens their gate."""
    shots = Path(os.environ.get("FORGE_SCREENSHOTS") or tmp_path / "shots") / request.param
    shots.mkdir(parents=True, exist_ok=True)
    gates, ledger = Gates(tmp_path / "gates"), tmp_path / "ledger.txt"
    deployment = Deployment(tmp_path, request.param,
                            FORGE_PYTHON_CALLABLES="forge.runs.callables.noop,tests.cluster.callables.gated",
                            FORGE_TEST_GATES=str(gates.path), FORGE_TEST_LEDGER=str(ledger))
    try:
        console = Console(deployment, shots)
    except BaseException:
        deployment.close()
        raise
    console.gates = gates
    try:
        yield console
        violations = console.csp_violations()
        assert not violations, "the Content-Security-Policy refused:\n" + "\n".join(violations)
    finally:
        console.close()
