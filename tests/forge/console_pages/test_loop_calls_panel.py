"""A loop step's panel lists its calls as seed 002 names them (spec section 9): each with its command as rendered
(a shell step's values beneath), its stdout, its verdict or the reply that followed, its time and cost; the run
page's graph data carries the loop's count."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from forge.runs.reads.loop_count import count_words
from forge.runs import services
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db
REVIEW = """
name: reviewed_change
steps:
  - id: review
    agent: mock
    command: "Review the change (cycle ${loop.cycle})."
    mock:
      cost: 0.25
      sequence:
        - {stdout: "Missing tests.\\nVERDICT: REQUEST_CHANGES"}
        - {stdout: "Added the tests."}
        - {stdout: "VERDICT: APPROVED", outputs: {ok: true}}
    loop:
      max_cycles: 2
      on_request_changes:
        fix_command: "Fix what the review asked: ${loop.review}"
        re_review_command: "Review again after: ${loop.fix}"
"""
SHELL_LOOP = """
name: counted_in_shell
args:
  word: {type: string, default: "it's here"}
steps:
  - id: count
    agent: shell
    command: "printf '%s %s' ${args.word} ${loop.iteration}"
    loop: {max_iterations: 2, until: "iteration >= 2"}
"""


def panel(client, run, step) -> str:
    return client.get(reverse("console:step", args=[run.pk, step])).content.decode()


def test_a_review_loop_lists_review_fix_and_review_again_with_verdicts(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(REVIEW)))
    assert run.status == "completed"
    client.force_login(operator)
    html = panel(client, run, "review")
    assert re.findall(r'data-call="([^"]+)"', html) == ["review", "review_fix_1", "review_2"]
    calls = html.split('<li class="call')[1:]
    assert "Review the change (cycle 0)." in calls[0] and "REQUEST_CHANGES</span>" in calls[0]
    assert "Fix what the review asked: Missing tests.\nVERDICT: REQUEST_CHANGES" in calls[1]
    assert "Review again after: Added the tests." in calls[2] and "APPROVED</span>" in calls[2]
    assert all("cost 0.25" in call for call in calls) and all(re.search(r"took \d+\.\d\d s", c) for c in calls)
    assert "cycle 1 of 2" in html  # the step's count: one fix cycle ran


def test_a_shell_loop_shows_its_command_and_the_values_it_refers_to(client, save_workflow, operator,
                                                                   django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the shell calls run in the worker, on commit
        run = services.run_start(user=operator, version=save_workflow(SHELL_LOOP))
    run.refresh_from_db()
    assert run.status == "completed"
    client.force_login(operator)
    html = panel(client, run, "count")
    assert re.findall(r'data-call="([^"]+)"', html) == ["count_iter_1", "count_iter_2"]
    second = html.split('<li class="call')[2]
    assert "$FORGE_V1" in second and "it&#x27;s here" in second and "it&#x27;s here 2" in second


def test_the_graph_data_carries_each_loop_step_s_count(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(REVIEW)))
    client.force_login(operator)
    html = client.get(reverse("console:run", args=[run.pk])).content.decode()
    data = json.loads(re.search(r'<script id="run-data" type="application/json">(.*?)</script>', html, re.S)[1])
    node = data["nodes"][0]
    assert node["loop"] == {"review": True, "max": 2} and node["iteration"] == 3
    assert count_words(node["loop"], node["iteration"]) == "cycle 1 of 2"
    assert count_words({"review": False, "max": 8}, 3) == "iteration 3 of 8"
    assert count_words({"review": True, "max": 2}, 1) == "cycle 0 of 2"  # the first review, before any fix


def test_the_run_log_names_which_call_of_a_loop_step_is_running(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(REVIEW)))
    client.force_login(operator)
    entries = client.get(reverse("console:run_log", args=[run.pk]), {"step": "review"}).json()["entries"]
    running = [e["text"] for e in entries if e["kind"] == "step" and e["text"].startswith("running")]
    assert running == ["running · attempt 1 · review", "running · attempt 1 · review_fix_1",
                       "running · attempt 1 · review_2"]


def test_the_run_log_shows_what_each_call_of_a_loop_step_printed_after_it(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(REVIEW)))
    client.force_login(operator)
    entries = client.get(reverse("console:run_log", args=[run.pk]), {"step": "review"}).json()["entries"]
    said = [e["text"] for e in entries if e["kind"] in ("step", "stdout") and not e["text"].startswith("pending")]
    assert said == ["running · attempt 1 · review", "Missing tests.\nVERDICT: REQUEST_CHANGES",
                    "running · attempt 1 · review_fix_1", "Added the tests.",
                    "running · attempt 1 · review_2", "completed · attempt 1", "VERDICT: APPROVED"]
