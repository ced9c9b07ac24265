"""A workflow's history at scale: the versions page lists the versions a page of 50 at a time, newest first, with
Older / Newer links, and still compares any two by number; the workflow's own page shows only its latest few
versions with their diffs (it diffed every pair of versions on every view) and links to the whole history."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from forge.workflows.models import Workflow, WorkflowVersion, content_hash

pytestmark = pytest.mark.django_db


def steps(n: int, word: str = "hello") -> str:
    return "".join(f"  - {{id: s{i}, agent: mock, command: say {word} {i}}}\n" for i in range(n))


def history(operator, count: int, width: int = 2) -> Workflow:
    """`big` with `count` versions, each changing one step's command (saved straight: the pages are under test)."""
    workflow = Workflow.objects.create(name="big")
    texts = [f"name: big\nsteps:\n{steps(width, f'v{n}')}" for n in range(1, count + 1)]
    WorkflowVersion.objects.bulk_create(
        WorkflowVersion(workflow=workflow, number=n, source=text, content_hash=content_hash(text), created_by=operator,
                        message=f"save {n}") for n, text in enumerate(texts, 1))
    return workflow


def get(client, user, address: str, status: int = 200) -> str:
    client.force_login(user)
    response = client.get(address)
    assert response.status_code == status, response.content[:400]
    return response.content.decode()


def listed(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-version="(\d+)">', html)]


VERSIONS = reverse("console:workflow_versions", args=["big"])


def test_a_long_history_is_listed_fifty_at_a_time_newest_first_with_older_and_newer(client, operator):
    history(operator, 120)
    first = get(client, operator, VERSIONS)
    assert listed(first) == list(range(120, 70, -1))
    assert "page 1 of 3" in first and 'id="newer"' not in first
    older = re.search(r'<a id="older" rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
    second = get(client, operator, VERSIONS + older)
    assert listed(second) == list(range(70, 20, -1)) and "page 2 of 3" in second
    assert 'id="newer"' in second and 'id="older"' in second
    last = get(client, operator, VERSIONS + "?page=3")
    assert listed(last) == list(range(20, 0, -1)) and 'id="older"' not in last
    assert "(latest)" not in last and last.count('class="restore"') == 20  # each old version may be restored


@pytest.mark.parametrize("page", ["-1", "0", str(10**30), "abc", "", "4", "2.5", "1e2"])
def test_a_page_that_is_not_one_gives_the_first(client, operator, page):
    history(operator, 120)
    assert listed(get(client, operator, f"{VERSIONS}?page={page}")) == list(range(120, 70, -1))


def test_any_two_versions_are_compared_by_number_whatever_page_is_shown(client, operator):
    history(operator, 120)
    html = get(client, operator, VERSIONS + "?a=3&b=117")  # v3 is on the third page, not this one
    assert 'type="number" id="a" name="a" min="1" max="120" value="3"' in html
    assert 'type="number" id="b" name="b" min="1" max="120" value="117"' in html
    assert "/editor/diff?workflow=big&amp;a=3&amp;b=117" in html
    html = get(client, operator, VERSIONS + "?a=500&b=7")  # no v500: said, and the default (v6) compared instead
    assert "This workflow has no version 500" in html and "/editor/diff?workflow=big&amp;a=6&amp;b=7" in html
    older = get(client, operator, VERSIONS + "?page=3")
    assert 'href="?page=3&amp;a=2&amp;b=3#compare"' in older  # each row's "changes": to the version before


def test_the_versions_page_reads_a_pages_worth_of_rows(client, operator):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    history(operator, 300)
    client.force_login(operator)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(VERSIONS).content.decode()
    assert html.count("<tr data-version=") == 50 and html.count("<option") == 0
    assert not [q["sql"] for q in queries if '"forge_workflows_workflowversion"."source"' in q["sql"]]


def test_the_workflow_page_shows_the_latest_few_versions_with_their_diffs_and_links_to_the_rest(client, operator):
    history(operator, 30)
    html = get(client, operator, reverse("console:workflow", args=["big"]))
    section = html[html.index('id="versions-h"'):]
    assert re.findall(r"<summary>v(\d+)", section) == ["30", "29", "28", "27", "26"]
    assert section.count('<pre class="diff">') == 5 and "-  - {id: s0, agent: mock, command: say v29 0}" in section
    assert f'href="{VERSIONS}"' in section and "All 30 versions" in section


def test_the_workflow_page_of_a_young_workflow_shows_each_version_and_the_first_text(client, operator):
    history(operator, 2)
    section = get(client, operator, reverse("console:workflow", args=["big"]))
    section = section[section.index('id="versions-h"'):]
    assert re.findall(r"<summary>v(\d+)", section) == ["2", "1"]
    assert "name: big" in section  # v1 has no version before it: its text is shown
