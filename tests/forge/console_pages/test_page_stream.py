"""The list pages' live socket (ws/live/), read by htmx's ws extension: HTML it swaps in, sent on connect and
again only when what a page lists changed, to people who may see runs. The badge's count comes whenever the
approvals a person may decide change; a fresh read of the page (an element htmx runs on load: hx-get "" with
hx-swap none, so only the page's parts marked hx-swap-oob change) only for a page that lists what changed."""

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from forge.console import watch
from forge.runs import services
from forge.runs.models import Approval
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL
from tests.forge.console_pages.test_run_stream import ORIGIN, login, socket_to, sync

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]
BADGE = re.compile(r'<span id="approvals-badge" hx-swap-oob="innerHTML">(\d+)</span>')


async def watch_pages(user, topics="runs"):
    headers = await sync_to_async(login)(user)
    communicator = socket_to(f"/ws/live/?topics={topics}", headers=headers)
    connected, _ = await communicator.connect(timeout=30)
    assert connected
    return communicator


async def fragment(communicator) -> str:
    return await communicator.receive_from(timeout=30)


def badge(html: str) -> int | None:
    found = BADGE.search(html)
    return int(found.group(1)) if found else None


def refreshes(html: str) -> bool:
    return watch.REFRESH in html


def test_the_fragments_are_what_htmx_swaps():
    assert watch.notice(["approvals"], [], 3) == '<span id="approvals-badge" hx-swap-oob="innerHTML">3</span>'
    assert watch.notice(["runs"], ["runs"], 0) == watch.REFRESH
    assert watch.notice(["runs"], ["approvals"], 0) == ""
    assert watch.notice(["approvals", "runs"], ["runs"], 2) == (
        '<span id="approvals-badge" hx-swap-oob="innerHTML">2</span>' + watch.REFRESH)
    for attribute in ('id="live-refresh"', 'hx-swap-oob="true"', 'hx-get=""', 'hx-trigger="load"',
                      'hx-swap="none"', "hidden"):
        assert attribute in watch.REFRESH


@sync
async def test_the_badge_counts_approvals_as_they_arrive_and_leave(save_workflow, operator, approver):
    communicator = await watch_pages(approver, topics="")
    first = await fragment(communicator)
    assert badge(first) == 0 and not refreshes(first)  # a page listing nothing only hears of its badge
    run = await sync_to_async(lambda: fast_forward(services.run_start(user=operator,
                                                                      version=save_workflow(APPROVAL))))()
    assert badge(await fragment(communicator)) == 1
    approval = await sync_to_async(Approval.objects.get)(run=run)
    await sync_to_async(services.approval_decide)(user=approver, approval=approval, decision="approve")
    await sync_to_async(fast_forward)(run)
    assert badge(await fragment(communicator)) == 0
    await communicator.disconnect()


@sync
async def test_the_inbox_is_read_again_when_an_approval_arrives(save_workflow, operator, approver):
    communicator = await watch_pages(approver, topics="approvals")
    first = await fragment(communicator)
    assert badge(first) == 0 and refreshes(first)  # on connect: whatever changed since the page was drawn
    await sync_to_async(lambda: fast_forward(services.run_start(user=operator, version=save_workflow(APPROVAL))))()
    html = await fragment(communicator)
    assert badge(html) == 1 and refreshes(html)
    await communicator.disconnect()


@sync
async def test_a_runs_list_hears_of_a_new_run_and_of_its_end_but_not_of_its_steps(save_workflow, operator,
                                                                                   approver):
    communicator = await watch_pages(operator)
    assert refreshes(await fragment(communicator))  # on connect: whatever changed since the page was drawn
    version = await sync_to_async(save_workflow)(APPROVAL)
    with override_settings(FORGE_LIVE_POLL_S=0.05):
        run = await sync_to_async(lambda: fast_forward(services.run_start(user=operator, version=version)))()
        html = await fragment(communicator)  # a new run, waiting for its approval
        assert refreshes(html) and badge(html) is None  # an operator decides nothing: the badge did not change
        assert await communicator.receive_nothing(timeout=0.5)  # nothing moved: no notice, however often it looks
        approval = await sync_to_async(Approval.objects.get)(run=run)
        await sync_to_async(services.approval_decide)(user=approver, approval=approval, decision="approve")
        await sync_to_async(fast_forward)(run)  # its steps move, then it ends
        assert refreshes(await fragment(communicator))
        assert await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
@sync
async def test_someone_who_may_not_see_runs_is_refused(who):
    headers = ORIGIN
    if who == "outsider":
        headers = await sync_to_async(login)(await sync_to_async(member)("oscar"))
    communicator = socket_to("/ws/live/?topics=runs", headers=headers)
    await communicator.connect(timeout=30)
    assert await communicator.receive_output(timeout=30) == {"type": "websocket.close", "code": 4403}


@sync
async def test_a_page_socket_from_another_origin_is_refused(approver):
    headers = [h for h in await sync_to_async(login)(approver) if h[0] != b"origin"] + [(b"origin", b"http://evil.example")]
    communicator = socket_to("/ws/live/", headers=headers)
    connected, _ = await communicator.connect(timeout=30)
    assert not connected


@sync
async def test_unknown_topics_and_bad_messages_change_nothing(approver):
    communicator = await watch_pages(approver, topics="secrets,../etc,runs,runs,<script>")
    first = await fragment(communicator)
    assert first == ('<span id="approvals-badge" hx-swap-oob="innerHTML">0</span>' + watch.REFRESH)
    assert await communicator.receive_nothing(timeout=0.3)  # one fragment for both topics, the refresh once
    await communicator.send_to(text_data="{")
    assert (await communicator.receive_json_from(timeout=30))["type"] == "error"
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=30) == {"type": "pong"}
    await communicator.disconnect()
