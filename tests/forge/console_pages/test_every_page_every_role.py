"""Every console page and fragment, and every admin page, opened by each role on a real run of every kind
(every_run_kind.py): never a 500, the status each role is owed, and no agent secret, gateway token or secret key
in any answer.

The pages are read from the URL resolver, so a page or fragment added to forge/console/urls.py is walked without
a change here; a route with a path value this walk cannot fill fails test_the_walk_knows_every_route.
test_every_url.py keeps what a walk of GETs cannot see: posts, CSRF, and the pages of a run without any secret.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from unittest import mock

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, reverse

from forge.audit.models import AuditEvent
from forge.console import urls as console_urls
from forge.runs.models import RUN_STATUSES, Approval, Artifact, Run, RunEvent, StepResult
from forge.workflows.editing import draft_open
from forge.workflows.models import Workflow, WorkflowVersion
from tests.forge.console_pages.every_run_kind import KINDS, world  # noqa: F401 - the fixture
from tests.forge.console_pages.test_run_stream import ORIGIN, login, socket_to, sync

pytestmark = pytest.mark.django_db
ROLES = ("olive", "april", "adam", "otto", "anonymous")
VIEWERS = ("olive", "april", "adam")  # Operators, Approvers, Admins: every console page is theirs to read
MISSING = 999999
OPEN = {"login", "logout"}  # the console's pages for someone without a session
ONLY = {"console:live_status": ("adam",)}  # pages for some of the viewers only
EDITORS = ("olive", "adam")  # Operators and Admins may edit workflows (the editor's pages and drafts)
EDITOR_PAGES = {"workflow_new", "editor"}  # pages only they may open (docs/editor.md)


@dataclass(frozen=True)
class Page:
    route: str  # the URL's name, e.g. "console:run"
    url: str
    missing: bool = False  # the URL names a row that does not exist


def routes(patterns, prefix: str = "") -> list[URLPattern]:
    """Every URLPattern under `patterns`, includes followed, each with its namespaced name in `full_name`."""
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found += routes(pattern.url_patterns, prefix + (f"{pattern.namespace}:" if pattern.namespace else ""))
        elif pattern.name:
            pattern.full_name = prefix + pattern.name
            found.append(pattern)
    return found


def path_values(pattern: URLPattern) -> set[str]:
    return set(pattern.pattern.regex.groupindex)


# -- the console's pages ------------------------------------------------------------------------------------------

CONSOLE = routes(console_urls.urlpatterns, "console:")
DRAFT_ROUTES = {p.full_name for p in CONSOLE if "draft_id" in path_values(p)}


def steps_of(run: Run) -> list[str]:
    return list(StepResult.objects.filter(run=run).order_by("id").values_list("step", flat=True))


def fillings(pattern: URLPattern, world) -> list[tuple[dict, bool]]:
    """Every (path values, names a missing row) a console route is walked with: each run of every kind, each
    of its steps, each approval, workflow, version and schedule, and one missing of each."""
    names = path_values(pattern)
    if names - FILLERS.keys() - {"step", "artifact_id"} or (names & {"step", "artifact_id"} and "run_id" not in names):
        return []
    if "artifact_id" in names:  # each kept file under its own run, and one missing under a run and a missing run
        return [({"run_id": run_id, "artifact_id": pk}, False)
                for run_id, pk in Artifact.objects.values_list("run_id", "pk")] + [
            ({"run_id": world.runs["completed"].pk, "artifact_id": MISSING}, True),
            ({"run_id": MISSING, "artifact_id": MISSING}, True)]
    values = [({}, False)]
    for name in sorted(names - {"step"}):
        values = [({**done, name: value}, gone or missing) for done, gone in values
                  for value, missing in FILLERS[name](world)]
    if "step" in names:
        values = [({**done, "step": step}, gone) for done, gone in values
                  for step in (steps_of(Run(pk=done["run_id"])) if not gone else [])]
        values += [({"run_id": world.runs["completed"].pk, "step": "no_such_step"}, True),
                   ({"run_id": MISSING, "step": "reveal"}, True)]
    return values


FILLERS = {
    "run_id": lambda world: [(run.pk, False) for run in world.runs.values()] + [(MISSING, True)],
    "approval_id": lambda world: [(pk, False) for pk in Approval.objects.values_list("pk", flat=True)]
                                 + [(MISSING, True)],
    "schedule_id": lambda world: [(world.schedule.pk, False), (MISSING, True)],
    "name": lambda world: [(name, False) for name in Workflow.objects.values_list("name", flat=True)]
                          + [("no_such_workflow", True)],
    "content_hash": lambda world: [(h, False) for h in WorkflowVersion.objects.values_list("content_hash", flat=True)]
                                  + [("0" * 64, True)],
    "draft_id": lambda world: [(draft_open(world.people["olive"], Workflow.objects.order_by("pk").first()).pk, False),
                               (MISSING, True)],
}

# Query strings that change what a page shows, walked besides the bare page: each filter of the lists, the
# whole step table, a restart plan, the run log's downloads, levels and steps, and Run again of each run.
QUERIES = {
    "console:runs": lambda world, values: [{"status": status} for status, _ in RUN_STATUSES]
                                          + [{"tab": tab} for tab in ("running", "waiting", "failed")]
                                          + [{"started_by": "olive"}, {"workflow": "every_kind_completes"}],
    "console:audit": lambda world, values: [{"run": str(world.runs["failed"].pk)}, {"actor": "olive"},
                                            *({"page": n} for n in range(2, AuditEvent.objects.count() // 50 + 2))],
    "console:run": lambda world, values: [{"steps": "all"}],
    "console:restart": lambda world, values: [{"step": step} for step in steps_of(Run(pk=values["run_id"]))[:1]],
    "console:run_log": lambda world, values: [{"format": "text"}, {"format": "jsonl"}, {"level": "error"},
                                              *({"step": step} for step in steps_of(Run(pk=values["run_id"]))[:1])],
    "console:workflow": lambda world, values: [{"run_again": pk} for pk in  # the Run form filled from a run
                                               Run.objects.filter(workflow__name=values["name"]).values_list(
                                                   "pk", flat=True)],
}


def console_pages(world) -> list[Page]:
    pages = []
    for pattern in CONSOLE:
        for values, missing in fillings(pattern, world):
            url = reverse(pattern.full_name, kwargs=values)
            pages.append(Page(pattern.full_name, url, missing))
            if not missing and pattern.full_name in QUERIES:
                pages += [Page(pattern.full_name, f"{url}?{'&'.join(f'{k}={v}' for k, v in query.items())}")
                          for query in QUERIES[pattern.full_name](world, values)]
    return pages


# -- the admin's pages --------------------------------------------------------------------------------------------

ADMIN = routes(admin.site.get_urls(), "admin:")


def admin_model(name: str):
    """The registered model an admin route belongs to (admin:<app>_<model>_<view>), or None."""
    for model in admin.site._registry:
        opts = model._meta
        if name.startswith(f"admin:{opts.app_label}_{opts.model_name}_"):
            return model
    return None


def admin_fillings(pattern: URLPattern, world) -> list[tuple[dict, bool]]:
    names, model = path_values(pattern), admin_model(pattern.full_name)
    if names == set():
        return [({}, False)]
    if names == {"app_label"}:
        return [({"app_label": label}, False) for label in sorted({m._meta.app_label for m in admin.site._registry})]
    if names == {"object_id"} and model is not None:
        newest = model._default_manager.order_by("-pk").values_list("pk", flat=True)[:1]
        return [({"object_id": pk}, False) for pk in newest] + [({"object_id": MISSING}, True)]
    if names == {"id"} and model is User:  # a person's password form
        return [({"id": world.people["olive"].pk}, False)]
    if names == {"content_type_id", "object_id"}:
        kind, run = ContentType.objects.get_for_model(Run), Run.objects.order_by("pk").first()
        return [({"content_type_id": kind.pk, "object_id": run.pk}, False)]
    return []


def admin_pages(world) -> list[Page]:
    return [Page(p.full_name, reverse(p.full_name, kwargs=values), missing)
            for p in ADMIN for values, missing in admin_fillings(p, world)]


# -- what each answer is checked for -------------------------------------------------------------------------------


def body(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace") + "\n".join(f"{k}: {v}" for k, v in response.items())


def leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return [what for what, value in secrets.items() if value in text]


def client_of(world, role: str) -> Client:
    client = Client(raise_request_exception=False)  # a 500 is reported with every other answer
    if world.people[role] is not None:
        client.force_login(world.people[role])
    return client


def post_only(world) -> set[str]:
    """The console routes a GET is refused with 405 for (forms that only post): an Admin's answer tells."""
    client = client_of(world, "adam")
    return {page.route for page in console_pages(world) if not page.missing
            and client.get(page.url).status_code == 405}


def owed(role: str, page: Page, posts: set[str]) -> set[int]:
    """The status `role` must get for a GET of a console page."""
    name = page.route.removeprefix("console:")
    if name == "login":
        return {200} if role == "anonymous" else {302}  # a person with a session is sent on
    if name == "logout":
        return {405}  # logging out is a post
    if role == "anonymous":
        return {302}  # to the login page
    if page.route in posts:
        return {405}
    if role == "otto" or role not in ONLY.get(page.route, VIEWERS):
        return {403}
    if name in EDITOR_PAGES and role not in EDITORS:
        return {403}
    if name == "editor_new" and role == "olive" and not page.missing:
        return {302}  # her draft is of a saved workflow (FILLERS): it opens at that workflow's editor
    if page.route in DRAFT_ROUTES:  # a draft (olive's, FILLERS) is its owner's; another editor's is not found
        return {403} if role not in EDITORS else {200} if role == "olive" and not page.missing else {404}
    if name == "editor_diff":
        return {400}  # the bare address names no versions to compare (the editor's tests walk its queries)
    if page.missing:
        return {404}
    if name == "restart" and "?step=" not in page.url:
        return {302}  # no step to plan from: back to the run, saying so
    return {200}


def walk(world, role: str, pages: list[Page], expect) -> tuple[list[str], Counter]:
    client, problems, tally = client_of(world, role), [], Counter()
    for page in pages:
        # A list page, and the part of it htmx asks for when it hears the list changed (watch.REFRESH).
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}) if page.url.count("/") <= 2 else ({},):
            response = client.get(page.url, **headers)
            tally[response.status_code] += 1
            wanted = expect(role, page)
            where = f"{role} GET {page.url}{' (htmx)' if headers else ''}"
            if response.status_code not in wanted:
                problems.append(f"{where}: {response.status_code}, not {sorted(wanted)}")
            if role == "anonymous" and response.status_code == 302 and page.route != "console:login":
                if not response["Location"].startswith(("/login/?next=", "/admin/login/?next=")) \
                        and page.route != "admin:logout":
                    problems.append(f"{where}: sent to {response['Location']}, not to log in")
            text = body(response)
            problems += [f"{where}: shows {what}" for what in leaks(text, world.secrets)]
            tally["redacted"] += "[secret]" in text
    return problems, tally


# -- the tests ------------------------------------------------------------------------------------------------------


def test_the_world_has_a_run_of_every_kind(world):
    runs = world.runs
    assert set(runs) == set(KINDS)
    statuses = {kind: run.status for kind, run in runs.items()}
    assert statuses == {"completed": "completed", "failed": "failed", "retrying": "running",
                        "escalated": "running", "cancelled": "cancelled", "restarted": "failed",
                        "scheduled": "completed", "parent": "completed", "child": "completed",
                        "waiting": "running", "replying": "running", "reviewing": "completed"}
    rows = {kind: {row.step: row for row in StepResult.objects.filter(run=run)} for kind, run in runs.items()}
    assert rows["failed"]["after_both"].error_code == "upstream_failed"
    assert rows["retrying"]["flaky"].attempt == 1 and rows["retrying"]["flaky"].error_code == "exit_code"
    assert Approval.objects.get(run=runs["escalated"]).status == "pending"
    assert Approval.objects.get(run=runs["waiting"]).status == "pending"
    assert [(a.iteration, a.status) for a in Approval.objects.filter(run=runs["replying"]).order_by("id")] == [
        (1, "answered"), (2, "pending")]
    assert rows["reviewing"]["review"].iteration == 3  # review, review_fix_1, review_2
    asked = Approval.objects.get(run=runs["replying"], status="pending")
    assert asked.output == "key=[secret]\nquestion 2"  # the iteration's output, as the inbox shows it
    assert runs["restarted"].restarted_from == runs["failed"]
    assert runs["child"].parent == runs["parent"]
    assert runs["scheduled"].schedule_fires.exists()
    # the secrets were used, and are shown redacted where they were printed
    assert rows["completed"]["reveal"].stdout == "key=[secret]\n"
    assert "[secret]" in rows["failed"]["reveal"].error
    assert rows["completed"]["ask"].status == "completed", rows["completed"]["ask"].error
    assert rows["completed"]["ask"].outputs == {"summary": "called with Bearer [secret]"}
    assert rows["completed"]["later"].outputs == {"echo": "[secret] [secret]"}  # by callback
    assert "[secret]" in rows["failed"]["refused"].error


def test_the_walk_knows_every_route(world):
    unknown = [p.full_name for p in CONSOLE if p.name not in OPEN and not fillings(p, world)]
    unknown += [p.full_name for p in ADMIN if not admin_fillings(p, world)]
    assert not unknown, f"routes whose path values this walk cannot fill (add them to FILLERS): {unknown}"
    walked = {page.route for page in console_pages(world)}
    assert walked == {p.full_name for p in CONSOLE}


@pytest.mark.parametrize("role", ROLES)
def test_every_console_page_answers_each_role_as_owed_and_shows_no_secret(world, role):
    posts, pages = post_only(world), console_pages(world)
    if role in ("otto", "anonymous"):  # refused before the row is looked at: once per route, and once missing
        pages = list({(page.route, page.missing): page for page in pages}.values())
    problems, tally = walk(world, role, pages, lambda role, page: owed(role, page, posts))
    print(f"{role}: {dict(sorted(tally.items(), key=str))}")
    assert not problems, "\n".join(problems)
    if role in VIEWERS:  # the pages did show where the secrets were printed, redacted
        assert tally["redacted"] > 0


def admin_owed(user, page: Page) -> set[int]:
    """What the admin answers an Admin: what its ModelAdmin permits (some rows only Forge itself writes)."""
    request = RequestFactory().get(page.url)
    request.user = user
    model, view = admin_model(page.route), page.route.rpartition("_")[2]
    if page.route == "admin:login":
        return {302}  # already logged in: on to the admin's index
    if page.route == "admin:logout":
        return {405}  # logging out is a post
    if page.route == "admin:autocomplete":
        return {403}  # asked without the field it completes
    if page.route == "admin:app_list":
        label = page.url.strip("/").rpartition("/")[2]
        shown = [m for m, a in admin.site._registry.items() if m._meta.app_label == label
                 and a.has_module_permission(request)]
        return {200} if shown else {404}
    if model is None:
        return {200} if page.route != "admin:view_on_site" else {302, 404}
    model_admin = admin.site._registry[model]
    allowed = {"changelist": model_admin.has_view_or_change_permission(request),
               "change": model_admin.has_view_or_change_permission(request),
               "history": model_admin.has_view_or_change_permission(request),
               "add": model_admin.has_add_permission(request),
               "delete": model_admin.has_delete_permission(request),
               "password": model_admin.has_change_permission(request)}.get(view)
    if page.missing and view == "history":
        return {302}  # the history looks for the row before asking who may read it
    if allowed is None:
        return {200}
    if not allowed:
        return {403}
    if page.missing:
        return {302}  # back to the list, saying the row is gone
    if view == "change" and type(model_admin).change_view is not admin.ModelAdmin.change_view:
        return {302}  # a one-row model (the kill switch) whose one page is its list
    return {200}


@pytest.mark.parametrize("role", ROLES)
def test_every_admin_page_answers_each_role_as_owed_and_shows_no_secret(world, role):
    def expect(role, page):
        if role != "adam":
            return {200} if page.route == "admin:login" else {302}  # to the admin's login: only Admins use it
        return admin_owed(world.people["adam"], page)

    pages = admin_pages(world)
    if role != "adam":  # refused before the route is looked at: once per route
        pages = list({page.route: page for page in pages}.values())
    problems, tally = walk(world, role, pages, expect)
    print(f"{role}: {dict(sorted(tally.items(), key=str))}")
    assert not problems, "\n".join(problems)


# -- the live sockets -------------------------------------------------------------------------------------------------


async def frames(path: str, headers, at_least: int = 0) -> tuple[list[str], int | None]:
    """Every text frame a socket to `path` sends on connect (and `at_least` frames), and the code it closed with
    (None: still open). A ping is answered after the consumer's connect: its pong comes after what connect sent."""
    socket = socket_to(path, headers=headers)
    connected, _ = await socket.connect(timeout=30)
    assert connected  # the consumer accepts first, then closes a socket it refuses
    sent, ponged = [], False
    try:
        await socket.send_to(text_data=json.dumps({"type": "ping"}))
        while True:
            output = await socket.receive_output(timeout=30)
            if output["type"] == "websocket.close":
                return sent, output.get("code")
            if output["text"] == json.dumps({"type": "pong"}):
                ponged = True
            else:
                sent.append(output["text"])
            if ponged and len(sent) >= at_least:
                return sent, None
    finally:
        await socket.disconnect()


def socket_headers(world, role: str):
    return ORIGIN if world.people[role] is None else login(world.people[role])


@pytest.mark.parametrize("role", ROLES)
def test_every_run_streams_to_each_role_as_owed_and_no_frame_shows_a_secret(world, role):
    headers, shown = socket_headers(world, role), []

    @sync
    async def scenario():
        problems = []
        for run_id in [*(run.pk for run in world.runs.values()), MISSING]:
            sent, code = await frames(f"/ws/runs/{run_id}/?after=0", headers)
            owed_code = None if role in VIEWERS else 4403
            if run_id == MISSING and role in VIEWERS:
                owed_code = 4404
            if code != owed_code:
                problems.append(f"{role} ws/runs/{run_id}: closed with {code}, not {owed_code}")
            problems += [f"{role} ws/runs/{run_id}: a frame shows {what}"
                         for frame in sent for what in leaks(frame, world.secrets)]
            shown.extend(sent)
        # its first notice (every topic changed since the page was drawn) comes from its watcher, after connect
        sent, code = await frames("/ws/live/?topics=runs,approvals", headers, at_least=1 if role in VIEWERS else 0)
        if code != (None if role in VIEWERS else 4403) or (role in VIEWERS and not sent):
            problems.append(f"{role} ws/live/: closed with {code}, {len(sent)} frames")
        problems += [f"{role} ws/live/: a frame shows {what}" for frame in sent for what in leaks(frame, world.secrets)]
        return problems

    # The consumers' database calls close "old" connections, which would end the module's transaction: kept open
    # here as the test client keeps it for a request (it disconnects the same function from its signals).
    with mock.patch("channels.db.close_old_connections"):
        problems = scenario()
    assert not problems, "\n".join(problems)
    if role in VIEWERS:  # the frames carried what the steps printed, with the secrets in it redacted
        events = [event for frame in shown for event in json.loads(frame).get("events", [])]
        run_and_steps = RunEvent.objects.filter(run__in=world.runs.values(), kind__in=("run", "step"))
        assert {event["id"] for event in events} >= set(run_and_steps.values_list("id", flat=True))
        assert any("[secret]" in json.dumps(event) for event in events)


def test_no_log_line_of_the_whole_walk_shows_a_secret(world):
    """Last in the module: the runs were built, and every page and socket above opened, with the logs kept."""
    assert len(world.logged) > 100  # the walk did log (a refusal is one line each)
    shown = [f"{what}: {line[:300]}" for line in world.logged for what in leaks(line, world.secrets)]
    assert not shown, "\n".join(shown)
