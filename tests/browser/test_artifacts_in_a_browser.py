"""A shell step's artifacts as a person finds them in Chromium, on SQLite and on PostgreSQL: the run's step panel
lists each file its `artifacts` globs kept, with its size and digest, says which match was refused (a link, never
followed), and the Download link gives exactly the bytes whose SHA-256 the panel shows."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.browser.test_console_in_a_browser import save_and_start

pytestmark = pytest.mark.slow

WRITES_REPORTS = """
name: writes_reports
steps:
  - id: build
    agent: shell
    command: >-
      mkdir -p report && printf 'quarterly numbers\\n' > report/summary.txt && seq 1 3000 > report/numbers.csv
      && ln -s summary.txt report/latest.txt && echo built
    artifacts: ["report/*.txt", "report/*.csv"]
"""
SUMMARY = b"quarterly numbers\n"
NUMBERS = "".join(f"{n}\n" for n in range(1, 3001)).encode()
PANEL = ".step-panel[data-step=build]"
WIDTH = "() => document.documentElement.scrollWidth"


def test_the_artifacts_of_a_shell_step_are_listed_and_one_downloads_with_its_digest(console, browser):
    run_id = save_and_start(console, WRITES_REPORTS, "writes_reports")
    olive = console.login_in(browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True),
                             "olive")
    olive.goto(f"{console.url}/runs/{run_id}/")
    olive.wait_for_function("() => window.forgeRun && window.forgeRun.runStatus === 'completed'")
    olive.click("[data-open-step=build]")
    olive.wait_for_selector(f"{PANEL} table.artifacts")

    rows = olive.locator(f"{PANEL} table.artifacts tbody tr")
    assert rows.count() == 2
    numbers = olive.locator(f"{PANEL} tr[data-artifact='report/numbers.csv']")
    summary = olive.locator(f"{PANEL} tr[data-artifact='report/summary.txt']")
    digest = hashlib.sha256(NUMBERS).hexdigest()
    assert numbers.get_attribute("data-sha256") == digest
    assert numbers.locator("td.size").inner_text() == f"{len(NUMBERS) / 1024:.1f} KiB"  # 13893 bytes: 13.6 KiB
    assert numbers.locator("details.digest summary").inner_text() == digest[:12] + "…"
    numbers.locator("details.digest summary").click()  # the whole digest, to copy
    assert numbers.locator("code.sha256").inner_text() == digest
    assert summary.locator("td.size").inner_text() == f"{len(SUMMARY)} bytes"
    assert summary.get_attribute("data-sha256") == hashlib.sha256(SUMMARY).hexdigest()
    refused = olive.locator(f"{PANEL} ul.refused li[data-refused='report/latest.txt']")
    assert "report/latest.txt" in refused.inner_text() and "attempt 1" in refused.inner_text()
    olive.locator(f"{PANEL} ul.refused").scroll_into_view_if_needed()  # the panel scrolls inside its card
    console.shot(olive, "artifacts-step-panel")

    link, panel = numbers.locator("a.download").bounding_box(), olive.locator(PANEL).bounding_box()
    assert link["x"] + link["width"] <= panel["x"] + panel["width"], "the download link is cut off by the panel"
    with olive.expect_download() as caught:
        numbers.locator("a.download").click()
    download = caught.value
    assert download.suggested_filename.endswith("numbers.csv")
    got = Path(download.path()).read_bytes()
    assert got == NUMBERS and hashlib.sha256(got).hexdigest() == digest

    olive.set_viewport_size({"width": 390, "height": 844})  # on a phone the panel fits; its table scrolls inside
    olive.wait_for_function("() => document.documentElement.clientWidth <= 390")
    assert olive.evaluate(WIDTH) <= 390
    olive.locator(f"{PANEL} table.artifacts").scroll_into_view_if_needed()
    console.shot(olive, "artifacts-step-panel-phone")
