"""A loop step's panel lists its iterations (spec section 9), each with its attempt, outputs and stdout."""

import re

import pytest
from django.urls import reverse

from forge.runs import services
from tests.forge.conftest import fast_forward

pytestmark = pytest.mark.django_db
LOOPS = """
name: loops
steps:
  - id: poll
    agent: mock
    command: poll
    mock: {stdout: "not yet", outputs: {seen: true}}
    loop: {max_iterations: 5, until: "iteration >= 3"}
"""


def test_a_loop_step_shows_each_iteration(client, save_workflow, operator):
    run = fast_forward(services.run_start(user=operator, version=save_workflow(LOOPS)))
    assert run.status == "completed"
    client.force_login(operator)
    html = client.get(reverse("console:step", args=[run.pk, "poll"])).content.decode()
    assert re.findall(r'data-iteration="(\d+)"', html) == ["1", "2", "3"]
    assert html.count("not yet") >= 3 and '&quot;seen&quot;: true' in html  # escaped in the page
