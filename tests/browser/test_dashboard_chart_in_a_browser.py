"""The dashboard's runs-per-day chart keeps its text at its size at any width (issue 17, point 27): its labels
read between 10 and 14 px on a 1440 px screen and on a 390 px phone, its bars still span the card, and the page
fits the phone."""

from __future__ import annotations

import pytest

from tests.browser.test_console_in_a_browser import NEEDS_A_YES, save, start_runs

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("console", ["sqlite"], indirect=True)]

# A label's size as drawn on the screen: its font size times the scale its SVG is drawn at.
LABELS = """() => [...document.querySelectorAll('svg.days text')].map((t) => ({
    text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a,
    height: t.getBoundingClientRect().height }))"""
SPAN = """() => { const svg = document.querySelector('svg.days').getBoundingClientRect();
    const bars = [...document.querySelectorAll('svg.days rect')].map((r) => r.getBoundingClientRect());
    return { svg: [svg.left, svg.right], bars: [Math.min(...bars.map((b) => b.left)),
                                                Math.max(...bars.map((b) => b.right))] }; }"""


def test_the_chart_labels_keep_their_size_at_1440_and_390_px(console, browser):
    save(console, NEEDS_A_YES)
    start_runs(console, "Acme", "Globex")
    console.deployment.query(  # one run 13 days ago: a bar at each end of the chart
        "from datetime import timedelta\nfrom django.utils import timezone\nfrom forge.runs.models import Run\n"
        "at = timezone.now() - timedelta(days=13)\n"
        "result = Run.objects.filter(pk=Run.objects.order_by('pk').first().pk).update(created_at=at, "
        "started_at=at, finished_at=at, status='completed')")
    page = console.login_in(browser.new_context(viewport={"width": 1440, "height": 1000}), "olive")
    page.goto(console.url + "/")
    page.wait_for_selector("svg.days rect")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        labels = page.evaluate(LABELS)
        assert len(labels) == 14 + 2  # a day number under each day, a total over each of the two days with runs
        for label in labels:
            assert 10 <= label["px"] <= 14, (width, label)
            assert 8 <= label["height"] <= 20, (width, label)  # what the screen shows, not only what CSS says
        span = page.evaluate(SPAN)
        card = span["svg"][1] - span["svg"][0]
        assert span["bars"][0] - span["svg"][0] < card / 14 and span["svg"][1] - span["bars"][1] < card / 14
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        console.shot(page, f"dashboard-chart-{width}")
