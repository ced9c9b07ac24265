"""Workflows in the console: the list, a workflow's versions with their diffs, and the Run form generated from
its arguments, judged by the same rules as `forge run --arg`."""

import json
import re

import pytest
from django.urls import reverse

from forge.audit.models import AuditEvent
from forge.runs.models import Run
from tests.typo_workflow import TYPO

pytestmark = pytest.mark.django_db

TYPED = """
name: typed_args
args:
  vendor: {type: string, required: true}
  limit: {type: integer, default: 5}
  strict: {type: boolean, default: false}
  tags: {type: array}
steps:
  - {id: look, agent: mock, command: "look at ${args.vendor}"}
"""


@pytest.fixture
def typed(save_workflow, operator):
    save_workflow(TYPED, user=operator)
    return save_workflow(TYPED.replace("default: 5", "default: 7"), user=operator)


def test_the_form_has_a_field_per_argument_with_its_type_and_default(client, typed, operator):
    client.force_login(operator)
    html = client.get(reverse("console:workflow", args=["typed_args"])).content.decode()
    assert 'name="arg-vendor"' in html and "(string, required)" in html
    assert 'name="arg-limit" value="7"' in html and 'type="checkbox" id="arg-strict"' in html
    assert 'textarea id="arg-tags"' in html
    assert "-  limit: {type: integer, default: 5}" in html and "+  limit: {type: integer, default: 7}" in html


def test_running_from_the_form_starts_the_latest_version_with_typed_arguments(client, typed, operator):
    client.force_login(operator)
    page = client.post(reverse("console:workflow", args=["typed_args"]),
                       {"arg-vendor": "Acme", "arg-limit": "3", "arg-strict": "on", "arg-tags": '["a", "b"]'})
    run = Run.objects.get()
    assert page.status_code == 302 and page["Location"] == reverse("console:run", args=[run.pk])
    assert (run.version, run.args, run.started_by) == (typed, {"vendor": "Acme", "limit": 3, "strict": True,
                                                              "tags": ["a", "b"], }, operator)
    assert AuditEvent.objects.filter(code="forge.run.started", run_id=run.pk).exists()


@pytest.mark.parametrize("posted, says", [({"arg-limit": "3"}, "Argument &#x27;vendor&#x27; is required"),
                                          ({"arg-vendor": "A", "arg-limit": "many"}, "limit"),
                                          ({"arg-vendor": "A", "arg-tags": "[1,"}, "must be JSON")])
def test_bad_arguments_are_shown_on_the_form_and_start_nothing(client, typed, operator, posted, says):
    client.force_login(operator)
    page = client.post(reverse("console:workflow", args=["typed_args"]), posted)
    assert page.status_code == 400 and says in page.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("posted, says", [
    ({"arg-vendor": "A", "arg-limit": "9" * 5000}, "Argument &#x27;limit&#x27; holds an integer beyond 64 bits"),
    ({"arg-vendor": "A", "arg-limit": str(2**63)}, "Argument &#x27;limit&#x27; holds an integer beyond 64 bits"),
    ({"arg-vendor": "A", "arg-limit": "²"}, "Argument &#x27;limit&#x27; must be an integer"),
    ({"arg-vendor": "A", "arg-tags": '["a\\u0000"]'}, "holds a NUL character or an unpaired surrogate"),
    ({"arg-vendor": "A", "arg-tags": "[" + "1," * 40_000 + "1]"}, "(at most 65536 bytes)"),
])
def test_arguments_no_database_keeps_are_shown_on_the_form_and_start_nothing(client, typed, operator, posted, says):
    client.force_login(operator)
    page = client.post(reverse("console:workflow", args=["typed_args"]), posted)
    assert page.status_code == 400 and says in page.content.decode()
    assert not Run.objects.exists() and not AuditEvent.objects.filter(code="forge.run.started").exists()


def test_a_nul_in_an_argument_is_refused_before_the_form_is_read(client, typed, operator):
    client.force_login(operator)
    page = client.post(reverse("console:workflow", args=["typed_args"]), {"arg-vendor": "Ac\x00me"})
    assert page.status_code == 400
    assert "form field 'arg-vendor' holds a control character (U+0000)" in page.content.decode()
    assert not Run.objects.exists()


def test_an_approver_sees_no_run_button_and_may_not_post_one(client, typed, approver):
    client.force_login(approver)
    assert 'id="run-form"' not in client.get(reverse("console:workflow", args=["typed_args"])).content.decode()
    page = client.post(reverse("console:workflow", args=["typed_args"]), {"arg-vendor": "A"})
    assert page.status_code == 400 and not Run.objects.exists()


def test_the_list_shows_each_workflow_with_its_latest_version(client, typed, operator):
    client.force_login(operator)
    html = client.get(reverse("console:workflows")).content.decode()
    assert 'data-workflow="typed_args"' in html and "v2" in html and "never run" in html


def test_an_unknown_workflow_is_404(client, operator):
    client.force_login(operator)
    assert client.get(reverse("console:workflow", args=["nosuch"])).status_code == 404


def test_the_page_carries_the_latest_version_s_graph(client, typed, operator):
    client.force_login(operator)
    html = client.get(reverse("console:workflow", args=["typed_args"])).content.decode()
    graph = json.loads(re.search(r'<script id="workflow-graph" type="application/json">(.*?)</script>', html, re.S)
                       .group(1))
    assert [node["id"] for node in graph["nodes"]] == ["look"] and graph["layout"] is None
    assert f'/layouts/{typed.content_hash}/' in html


# -- validation warnings (spec 15: unknown_name) -------------------------------------------------------------


def test_the_workflow_page_lists_the_versions_warnings_with_their_lines(client, save_workflow, operator):
    save_workflow(TYPO, user=operator)
    client.force_login(operator)
    html = client.get(reverse("console:workflow", args=["typo"])).content.decode()
    section = html[html.index('id="warnings"'):html.index("</section>", html.index('id="warnings"'))]
    assert "1 warning in v1" in section
    assert "line 12, column 16: step <code>deploy</code>: <code>unknown_name</code> " \
           "&#x27;redy&#x27; is not a name in scope in `condition` (did you mean &#x27;ready&#x27;?)" in section


def test_a_version_without_warnings_shows_no_warning_card(client, typed, operator):
    client.force_login(operator)
    assert 'id="warnings"' not in client.get(reverse("console:workflow", args=["typed_args"])).content.decode()
