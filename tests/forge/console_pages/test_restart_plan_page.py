"""A restart plan puts the decision first (issue 17, point 4 of the console's pages): its Restart button, or why it
is not offered, and the summary (N steps run again, M carried) come before the lists, and a long list is folded
under a summary with its count, so a big run's button is on the first screen."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from forge.runs import services
from tests.forge.conftest import fast_forward

CARRIED, AGAIN = 30, 25
BIG = "name: big_restart\nsteps:\n" + "".join(
    f"  - {{id: c{n}, agent: mock, command: c{n}{', depends_on: [c%d]' % (n - 1) if n else ''}}}\n"
    for n in range(CARRIED)) + (
    f"  - {{id: load, agent: mock, command: load, depends_on: [c{CARRIED - 1}], "
    "mock: {fail_times: 9, error: disk full}}\n"
) + "".join(f"  - {{id: r{n}, agent: mock, command: r{n}, depends_on: [load]}}\n" for n in range(AGAIN))
SMALL = """
name: small_restart
steps:
  - {id: fetch, agent: mock, command: fetch, mock: {outputs: {rows: 3}}}
  - {id: load, agent: mock, command: load, depends_on: [fetch], mock: {fail_times: 9, error: disk full}}
"""


def plan_page(client, user, run) -> str:
    client.force_login(user)
    response = client.get(reverse("console:restart", args=[run.pk]), {"step": "load"})
    assert response.status_code == 200
    return response.content.decode()


def test_a_big_runs_restart_button_and_summary_come_before_its_folded_lists(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(BIG)))
    assert run.status == "failed"
    html = plan_page(client, operator, run)
    button = html.index('<button type="submit">Restart from load</button>')
    summary = re.search(r'<p id="restart-summary">(.*?)</p>', html, re.S)
    assert re.sub(r"<[^>]+>", "", summary.group(1)) == (
        f"{AGAIN + 1} steps run again, {CARRIED} are carried with their outputs.")
    assert summary.start() < button < html.index('id="rerun"') and button < html.index('id="carried"')
    # Both lists are long: folded, each with its count in the summary a person opens it by.
    rerun = re.search(r'<details id="rerun-list"( open)?>\s*<summary>(.*?)</summary>', html, re.S)
    carried = re.search(r'<details id="carried-list"( open)?>\s*<summary>(.*?)</summary>', html, re.S)
    assert rerun.group(1) is None and carried.group(1) is None
    assert f'<span class="count">{AGAIN + 1}</span>' in rerun.group(2)
    assert f'<span class="count">{CARRIED}</span>' in carried.group(2)
    assert html.count("<li>r") == AGAIN and html.count("<tr><td>c") == CARRIED  # folded, not left out


def test_a_small_plans_lists_are_open_and_a_refusal_comes_first_too(client, save_workflow, operator, approver):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(SMALL)))
    html = plan_page(client, operator, run)
    assert re.search(r'<details id="rerun-list" open>', html) and re.search(r'<details id="carried-list" open>', html)
    assert re.sub(r"<[^>]+>", "", re.search(r'<p id="restart-summary">(.*?)</p>', html, re.S).group(1)) == (
        "1 step runs again, 1 is carried with its outputs.")
    refused = plan_page(client, approver, run)  # an approver may not restart: why, before the lists
    assert "<button type=\"submit\">Restart" not in refused
    assert refused.index('id="restart-refusal"') < refused.index('id="rerun"')
