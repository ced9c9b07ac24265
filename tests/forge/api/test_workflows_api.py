"""The workflows operations of /api/v1: what the console's workflow and versions pages show, through the same
selectors and services, and every bad request a problem that changes nothing."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from forge.accounts.tokens import token_create
from forge.audit import codes
from forge.audit.models import AuditEvent
from forge.workflows.models import Workflow, WorkflowVersion
from forge.workflows.services import workflow_version_save

API = "/api/v1"
GREETER = """name: greeter
description: Says hello
steps:
  # the first step
  - id: hello
    agent: mock
    command: say hello
"""
GREETER_2 = GREETER + """  - id: shout
    agent: mock
    stdin: $hello.stdout
    command: tr a-z A-Z
"""
# The bytes of an uploaded file, kept as they are: a BOM and CRLF line endings.
CRLF_BOM = "\ufeffname: windows\r\ndescription: From a Windows editor\r\nsteps:\r\n  - id: a\r\n    agent: mock\r\n" \
           "    command: echo hi\r\n"
# A billion laughs: nine aliases of nine aliases... expanding to 9**9 nodes.
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


def client_of(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def problem(response, status: int, slug: str) -> dict:
    """The answer is the problem+json of `slug` with `status` and a sentence to show."""
    assert response.status_code == status, response.content[:400]
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"https://forge.invalid/problems/{slug}" and body["status"] == status and body["detail"]
    return body


def unchanged() -> tuple:
    return (list(WorkflowVersion.objects.order_by("pk").values_list("pk", "source", "message")),
            list(Workflow.objects.order_by("pk").values_list("pk", "name", "description")),
            AuditEvent.objects.count())


@pytest.fixture
def greeter(operator):
    workflow_version_save(user=operator, source=GREETER, message="first")
    return workflow_version_save(user=operator, source=GREETER_2, message="shout it").workflow


# -- the list -------------------------------------------------------------------------------------------------------


def test_the_list_pages_workflows_by_name_with_their_latest_version(operator, greeter):
    workflow_version_save(user=operator, source=GREETER.replace("greeter", "another"))
    client = client_of(operator)
    seen, address = [], f"{API}/workflows?limit=2"
    while address:
        page = client.get(address)
        assert page.status_code == 200 and len(page.json()["results"]) <= 2
        seen += page.json()["results"]
        address = page.json()["next"]
    assert [w["name"] for w in seen] == sorted(Workflow.objects.values_list("name", flat=True))
    rows = {w["name"]: (w["latest_version"], w["version_count"], w["description"]) for w in seen}
    assert rows["greeter"] == (2, 2, "Says hello") and rows["another"] == (1, 1, "Says hello")


def test_the_list_keeps_the_workflows_named_or_whose_name_holds_the_filter(operator, greeter):
    workflow_version_save(user=operator, source=GREETER.replace("greeter", "another"))
    client = client_of(operator)
    assert [w["name"] for w in client.get(f"{API}/workflows?name_contains=EET").json()["results"]] == ["greeter"]
    assert [w["name"] for w in client.get(f"{API}/workflows?name=another").json()["results"]] == ["another"]
    assert client.get(f"{API}/workflows?name=greet").json()["results"] == []
    problem(client.get(f"{API}/workflows?name_contains=" + "x" * 200), 400, "bad-request")


def test_the_list_asks_the_database_a_bounded_number_of_times(operator, django_assert_max_num_queries):
    for n in range(30):
        for version in range(3):
            workflow_version_save(user=operator, source=GREETER.replace("greeter", f"flow_{n:02}")
                                  + f"# edit {version}\n")
    client = client_of(operator)
    with django_assert_max_num_queries(8):
        response = client.get(f"{API}/workflows")
    assert len(response.json()["results"]) == min(Workflow.objects.count(), 50)
    assert {w["version_count"] for w in response.json()["results"] if w["name"].startswith("flow_")} == {3}


def test_anyone_in_a_group_reads_workflows_and_an_outsider_is_refused(approver, outsider, greeter):
    assert client_of(approver).get(f"{API}/workflows").status_code == 200
    problem(client_of(outsider).get(f"{API}/workflows"), 403, "forbidden")
    problem(client_of(outsider).get(f"{API}/workflows/greeter"), 403, "forbidden")
    assert client_of().get(f"{API}/workflows").status_code in (401, 403)


def test_the_list_takes_no_other_method(operator):
    problem(client_of(operator).delete(f"{API}/workflows"), 405, "method-not-allowed")


# -- one workflow, its versions -------------------------------------------------------------------------------------


def test_a_workflow_shows_its_latest_version_and_counts(approver, greeter):
    body = client_of(approver).get(f"{API}/workflows/greeter").json()
    assert body["name"] == "greeter" and body["description"] == "Says hello"
    assert body["latest"]["number"] == 2 and body["latest"]["message"] == "shout it"
    assert body["latest"]["author"] == "olive"
    assert body["counts"] == {"versions": 2, "runs": 0, "schedules": 0}


def test_an_unknown_workflow_is_not_found(operator):
    problem(client_of(operator).get(f"{API}/workflows/nobody"), 404, "not-found")
    problem(client_of(operator).get(f"{API}/workflows/nobody/versions"), 404, "not-found")
    problem(client_of(operator).get(f"{API}/workflows/{'x' * 5000}"), 404, "not-found")


def test_a_workflow_named_validate_is_read_at_its_address(operator):
    workflow_version_save(user=operator, source=GREETER.replace("greeter", "validate"))
    assert client_of(operator).get(f"{API}/workflows/validate").json()["name"] == "validate"


def test_versions_are_listed_newest_first_a_page_at_a_time(operator, greeter, django_assert_max_num_queries):
    for n in range(3, 8):
        workflow_version_save(user=operator, source=GREETER_2 + f"# v{n}\n", message=f"v{n}")
    client = client_of(operator)
    with django_assert_max_num_queries(8):
        first = client.get(f"{API}/workflows/greeter/versions?limit=4")
    assert [v["number"] for v in first.json()["results"]] == [7, 6, 5, 4]
    assert first.json()["results"][0]["message"] == "v7"
    assert [v["number"] for v in client.get(first.json()["next"]).json()["results"]] == [3, 2, 1]
    problem(client.get(f"{API}/workflows/greeter/versions?cursor=not-a-cursor"), 400, "bad-request")
    problem(client.post(f"{API}/workflows/greeter/versions", {}, format="json"), 405, "method-not-allowed")


def test_a_version_shows_its_metadata(operator, greeter):
    body = client_of(operator).get(f"{API}/workflows/greeter/versions/1").json()
    version = WorkflowVersion.objects.get(workflow=greeter, number=1)
    assert body == {"workflow": "greeter", "number": 1, "content_hash": version.content_hash, "message": "first",
                    "author": "olive", "created_at": body["created_at"]}
    assert body["created_at"].startswith(version.created_at.strftime("%Y-%m-%dT%H:%M:%S"))


@pytest.mark.parametrize("number", ["3", "0", "99999999999", "999999999999999999999999"])
def test_a_version_that_does_not_exist_is_not_found(operator, greeter, number):
    problem(client_of(operator).get(f"{API}/workflows/greeter/versions/{number}"), 404, "not-found")
    problem(client_of(operator).get(f"{API}/workflows/greeter/versions/{number}/yaml"), 404, "not-found")


def test_a_version_number_that_is_not_one_is_not_found(operator, greeter):
    problem(client_of(operator).get(f"{API}/workflows/greeter/versions/one"), 404, "not-found")


def test_the_yaml_of_a_version_is_its_exact_bytes(operator):
    workflow_version_save(user=operator, source=CRLF_BOM)
    response = client_of(operator).get(f"{API}/workflows/windows/versions/1/yaml")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/yaml")
    assert response.content == CRLF_BOM.encode("utf-8")
    assert response.content.startswith(b"\xef\xbb\xbfname: windows\r\n")


def test_the_yaml_of_a_version_refuses_an_outsider_as_a_problem(outsider, greeter):
    problem(client_of(outsider).get(f"{API}/workflows/greeter/versions/1/yaml"), 403, "forbidden")


# -- saving a version from YAML -------------------------------------------------------------------------------------


def test_yaml_of_a_new_workflow_is_saved_as_its_first_version(operator):
    response = client_of(operator).post(f"{API}/workflows", {"yaml": CRLF_BOM, "message": "from Windows"},
                                        format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["workflow"], body["number"], body["created"], body["message"]) == ("windows", 1, True,
                                                                                    "from Windows")
    assert WorkflowVersion.objects.get(workflow__name="windows").source == CRLF_BOM
    assert AuditEvent.objects.filter(code=codes.WORKFLOW_CREATED, actor=operator.username).count() == 1


def test_yaml_naming_a_workflow_is_saved_as_its_next_version_and_the_same_text_adds_none(operator, greeter):
    client = client_of(operator)
    response = client.post(f"{API}/workflows", {"yaml": GREETER_2 + "# more\n"}, format="json")
    assert (response.status_code, response.json()["number"]) == (201, 3)
    again = client.post(f"{API}/workflows", {"yaml": GREETER_2 + "# more\n"}, format="json")
    assert (again.status_code, again.json()["number"], again.json()["created"]) == (200, 3, False)
    assert greeter.versions.count() == 3


def test_invalid_yaml_is_a_422_with_the_validators_problems(operator, greeter):
    before = unchanged()
    broken = GREETER_2.replace("stdin: $hello.stdout", "depends_on: [nowhere]")
    body = problem(client_of(operator).post(f"{API}/workflows", {"yaml": broken}, format="json"), 422, "invalid")
    assert body["problems"] and {"code", "message", "line", "step"} <= set(body["problems"][0])
    assert body["problems"][0]["step"] == "shout" and body["problems"][0]["line"]
    assert unchanged() == before


def test_a_yaml_bomb_is_refused_quickly_and_saves_nothing(operator):
    before = unchanged()
    body = problem(client_of(operator).post(f"{API}/workflows", {"yaml": BOMB}, format="json"), 422, "invalid")
    assert body["problems"][0]["code"] == "alias_limit"
    assert unchanged() == before


def test_an_approver_may_not_save_a_version(approver, outsider):
    for user in (approver, outsider):
        problem(client_of(user).post(f"{API}/workflows", {"yaml": GREETER}, format="json"), 403, "forbidden")
    assert not Workflow.objects.filter(name="greeter").exists()


@pytest.mark.parametrize("body, slug", [
    ({"yaml": GREETER, "colour": "red"}, "bad-request"),  # an unknown field
    ({"yaml": 5}, "bad-request"),  # not a string
    ({"yaml": ["name: x"]}, "bad-request"),
    ({}, "bad-request"),
    ({"yaml": GREETER, "message": "m" * 501}, "bad-request"),
    ({"yaml": GREETER, "message": "bell\x07"}, "bad-request"),
    ({"yaml": GREETER.replace("say hello", "say \ud800")}, "bad-request"),  # a lone surrogate
    ({"yaml": GREETER.replace("say hello", "say \x00")}, "bad-request"),
    ({"yaml": GREETER + "#" * 1_100_000}, "too-large"),
])
def test_a_bad_body_is_a_problem_and_saves_nothing(operator, body, slug):
    response = client_of(operator).generic("POST", f"{API}/workflows", json.dumps(body),
                                           content_type="application/json")
    problem(response, 413 if slug == "too-large" else 400, slug)
    assert not Workflow.objects.filter(name="greeter").exists()


def test_a_20_mib_body_is_refused_before_it_is_read(operator):
    response = client_of(operator).generic("POST", f"{API}/workflows",
                                           json.dumps({"yaml": "#" * (20 * 1_048_576)}),
                                           content_type="application/json")
    problem(response, 413, "too-large")
    assert not Workflow.objects.filter(name="greeter").exists()


def test_a_body_that_is_no_json_is_a_problem(operator):
    response = client_of(operator).generic("POST", f"{API}/workflows", b"yaml: [", content_type="application/json")
    problem(response, 400, "bad-request")


# -- validating -----------------------------------------------------------------------------------------------------


def test_validate_says_what_forge_validate_says_and_saves_nothing(approver):
    client = client_of(approver)
    good = client.post(f"{API}/workflows/validate", {"yaml": GREETER}, format="json")
    assert good.status_code == 200 and good.json() == {"valid": True, "problems": [], "warnings": []}
    bad = client.post(f"{API}/workflows/validate", {"yaml": GREETER.replace("agent: mock", "agent: 5")},
                      format="json").json()
    assert bad["valid"] is False
    assert [(p["step"], p["line"]) for p in bad["problems"]] == [("hello", 6)]
    bomb = client.post(f"{API}/workflows/validate", {"yaml": BOMB}, format="json").json()
    assert [p["code"] for p in bomb["problems"]] == ["alias_limit"]
    assert not Workflow.objects.filter(name="greeter").exists() and not AuditEvent.objects.exists()


def test_validate_refuses_an_outsider_and_bad_bodies(operator, outsider):
    problem(client_of(outsider).post(f"{API}/workflows/validate", {"yaml": GREETER}, format="json"), 403,
            "forbidden")
    client = client_of(operator)
    problem(client.post(f"{API}/workflows/validate", {"yaml": GREETER, "save": True}, format="json"), 400,
            "bad-request")
    problem(client.post(f"{API}/workflows/validate", {"yaml": None}, format="json"), 400, "bad-request")
    problem(client.put(f"{API}/workflows/validate", {"yaml": GREETER}, format="json"), 405, "method-not-allowed")


def test_the_validate_address_reads_no_workflow_when_none_is_named_so(operator):
    problem(client_of(operator).get(f"{API}/workflows/validate"), 404, "not-found")


# -- diff -----------------------------------------------------------------------------------------------------------


def test_the_diff_of_two_versions_is_the_engines_as_the_versions_page_shows(approver, greeter):
    body = client_of(approver).get(f"{API}/workflows/greeter/diff?from=1&to=2").json()
    assert body["diff"].startswith("--- v1\n+++ v2\n")
    assert "+  - id: shout\n" in body["diff"]
    assert body["summary"]["added"] == ["shout"]
    back = client_of(approver).get(f"{API}/workflows/greeter/diff?from=2&to=1").json()
    assert back["summary"]["removed"] == ["shout"]


@pytest.mark.parametrize("query, status", [
    ("from=1&to=3", 404), ("from=0&to=1", 400), ("from=one&to=2", 400), ("to=2", 400),
    ("from=1&to=2&context=9", 400), ("from=1&to=99999999999999999999", 400),
])
def test_a_bad_diff_query_is_a_problem(operator, greeter, query, status):
    response = client_of(operator).get(f"{API}/workflows/greeter/diff?{query}")
    problem(response, status, "not-found" if status == 404 else "bad-request")


def test_the_diff_of_an_unknown_workflow_or_for_an_outsider_is_refused(operator, outsider, greeter):
    problem(client_of(operator).get(f"{API}/workflows/nobody/diff?from=1&to=2"), 404, "not-found")
    problem(client_of(outsider).get(f"{API}/workflows/greeter/diff?from=1&to=2"), 403, "forbidden")
    problem(client_of(operator).post(f"{API}/workflows/greeter/diff?from=1&to=2"), 405, "method-not-allowed")


# -- through a token, and retried ------------------------------------------------------------------------------------


def token_client(user, *scopes: str) -> APIClient:
    _, secret = token_create(user=user, name="script", scopes=list(scopes))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_token_reads_with_runs_read_and_saves_only_with_workflows_write(operator):
    reader = token_client(operator, "runs:read")
    assert reader.get(f"{API}/workflows").status_code == 200
    problem(reader.post(f"{API}/workflows", {"yaml": GREETER}, format="json"), 403, "scope-missing")
    writer = token_client(operator, "workflows:write")
    response = writer.post(f"{API}/workflows", {"yaml": GREETER}, format="json")
    assert response.status_code == 201
    event = AuditEvent.objects.get(code=codes.WORKFLOW_CREATED)
    assert event.token_id is not None and event.actor == operator.username


def test_workflows_write_reads_the_workflows_it_edits_but_not_their_runs(operator, greeter):
    writer = token_client(operator, "workflows:write")
    assert "greeter" in [w["name"] for w in writer.get(f"{API}/workflows?limit=200").json()["results"]]
    assert writer.get(f"{API}/workflows/greeter/versions/1/yaml").content.decode() == GREETER
    assert writer.post(f"{API}/workflows/validate", {"yaml": GREETER_2}, format="json").status_code == 200
    assert writer.post(f"{API}/workflows/greeter/drafts").status_code == 201  # a draft of it, to edit
    runs = problem(writer.get(f"{API}/runs"), 403, "scope-missing")
    assert runs["scope"] == "runs:read" and "runs:read or runs:write" in runs["detail"]


def test_a_retried_save_with_its_idempotency_key_makes_one_version(operator):
    client = client_of(operator)
    first = client.post(f"{API}/workflows", {"yaml": GREETER}, format="json", HTTP_IDEMPOTENCY_KEY="save-1")
    again = client.post(f"{API}/workflows", {"yaml": GREETER}, format="json", HTTP_IDEMPOTENCY_KEY="save-1")
    assert (first.status_code, again.status_code, again["Idempotent-Replayed"]) == (201, 201, "true")
    assert again.json() == first.json()
    assert WorkflowVersion.objects.filter(workflow__name="greeter").count() == 1
    other = client.post(f"{API}/workflows", {"yaml": GREETER_2}, format="json", HTTP_IDEMPOTENCY_KEY="save-1")
    problem(other, 422, "invalid")
    assert WorkflowVersion.objects.filter(workflow__name="greeter").count() == 1


def test_a_message_that_is_no_string_is_refused(operator):
    response = client_of(operator).post(f"{API}/workflows", {"yaml": GREETER, "message": 5}, format="json")
    problem(response, 400, "bad-request")
    assert not Workflow.objects.filter(name="greeter").exists()
