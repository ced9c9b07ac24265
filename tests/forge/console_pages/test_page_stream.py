"""The list pages' live notices (ws/live/): the approvals badge's count and 'the runs changed', sent on connect
and again only when what a page lists changed, to people who may see runs."""

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from forge.runs import services
from forge.runs.models import Approval
from tests.forge.conftest import fast_forward, member
from tests.forge.console_pages.conftest import APPROVAL
from tests.forge.console_pages.test_run_stream import ORIGIN, login, socket_to, sync

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


async def watch(user, topics="runs"):
    headers = await sync_to_async(login)(user)
    communicator = socket_to(f"/ws/live/?topics={topics}", headers=headers)
    connected, _ = await communicator.connect(timeout=30)
    assert connected
    return communicator


async def notice(communicator, topic):
    """The next notice of `topic` (the other topic's may come first)."""
    while True:
        message = await communicator.receive_json_from(timeout=30)
        assert message["type"] == "changed", message
        if message["topic"] == topic:
            return message


@sync
async def test_the_badge_counts_approvals_as_they_arrive_and_leave(save_workflow, operator, approver):
    communicator = await watch(approver, topics="")
    assert (await notice(communicator, "approvals"))["count"] == 0
    run = await sync_to_async(lambda: fast_forward(services.run_start(user=operator,
                                                                      version=save_workflow(APPROVAL))))()
    assert (await notice(communicator, "approvals"))["count"] == 1
    approval = await sync_to_async(Approval.objects.get)(run=run)
    await sync_to_async(services.approval_decide)(user=approver, approval=approval, decision="approve")
    await sync_to_async(fast_forward)(run)
    assert (await notice(communicator, "approvals"))["count"] == 0
    await communicator.disconnect()


@sync
async def test_a_runs_list_hears_of_a_new_run_and_of_its_end_but_not_of_its_steps(save_workflow, operator,
                                                                                   approver):
    communicator = await watch(operator)
    await notice(communicator, "runs")  # on connect: whatever changed since the page was drawn
    version = await sync_to_async(save_workflow)(APPROVAL)
    with override_settings(FORGE_LIVE_POLL_S=0.05):
        run = await sync_to_async(lambda: fast_forward(services.run_start(user=operator, version=version)))()
        await notice(communicator, "runs")  # a new run, waiting for its approval
        assert await communicator.receive_nothing(timeout=0.5)  # nothing moved: no notice, however often it looks
        approval = await sync_to_async(Approval.objects.get)(run=run)
        await sync_to_async(services.approval_decide)(user=approver, approval=approval, decision="approve")
        await sync_to_async(fast_forward)(run)  # its steps move, then it ends
        await notice(communicator, "runs")
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
    communicator = await watch(approver, topics="secrets,../etc,runs,runs")
    topics = {(await communicator.receive_json_from(timeout=30))["topic"] for _ in range(2)}
    assert topics == {"approvals", "runs"}
    await communicator.send_to(text_data="{")
    assert (await communicator.receive_json_from(timeout=30))["type"] == "error"
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=30) == {"type": "pong"}
    await communicator.disconnect()
