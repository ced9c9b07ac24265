"""Five hundred sockets opened together against a real daphne on PostgreSQL + Redis: every one joins its run's
group (none falls back to polling), each receives every event of its run, in order, once, and no other, and all
close within 5 s when their person is deactivated by another process."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import uuid

import pytest
import redis
from channels_redis.core import RedisChannelLayer
from redis.exceptions import MaxConnectionsError

from forge.channel_layer import PooledRedisChannelLayer
from tests.browser.console import free_port
from tests.cluster.harness import REDIS_URL, deployed
from tests.cluster.websocket_client import Socket
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.slow

SOCKETS, RUNS = 500, 10


class Viewer:
    """One socket to a run's stream, and what it received."""

    def __init__(self, run: int):
        self.run, self.messages, self.closed = run, [], None

    async def watch(self, port: int, cookie: str) -> None:
        socket = await Socket.open(port, f"/ws/runs/{self.run}/?after=0",
                                   {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"})
        self.task = asyncio.ensure_future(self.read(socket))

    async def read(self, socket: Socket) -> None:
        while isinstance(message := await socket.receive(), str):
            self.messages.append(json.loads(message))
        self.closed = message


def received(viewer) -> list[int]:
    return [event["id"] for message in viewer.messages if message["type"] == "events" for event in message["events"]]


async def until(condition, *, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, f"{what}: still not so after {timeout} s"
        await asyncio.sleep(0.2)


def test_five_hundred_sockets_opened_together_all_join_and_each_gets_every_event_of_its_run(tmp_path):
    # No poll and no session check within the test's time: every event after the replay can only come through
    # the run's group, and a close for the session only through the person's group.
    with deployed("forge-sockets-", "postgres", FORGE_PYTHON_CALLABLES="forge.runs.callables.noop",
                  FORGE_LIVE_POLL_S="600", FORGE_LIVE_SESSION_CHECK_S="600") as deployment:
        # People without a password (hashing one costs seconds on a busy machine): sessions are made directly.
        prepared = deployment.query(
            "from django.contrib.auth.models import Group, User\nfrom django.test import Client\n"
            "from forge.runs import services\nfrom forge.workflows.services import workflow_version_save\n"
            "people = {}\nfor name, group in (('olive', 'Operators'), ('april', 'Approvers'), ('adam', 'Admins')):\n"
            "    people[name] = User.objects.create(username=name)\n"
            "    people[name].groups.add(Group.objects.get(name=group))\n"
            f"version = workflow_version_save(user=None, source={APPROVAL!r})\n"
            f"runs = [services.run_start(user=people['olive'], version=version).pk for _ in range({RUNS})]\n"
            "cookies = {}\nfor name in ('april', 'adam'):\n"
            "    client = Client()\n    client.force_login(people[name])\n"
            "    cookies[name] = client.cookies['sessionid'].value\n"
            "result = {'runs': runs, 'cookies': cookies}")
        runs, cookies = prepared["runs"], prepared["cookies"]
        deployment.start_cluster()
        port = free_port()
        deployment.start_daphne(port)
        waiting = ("SELECT count(*) FROM forge_runs_approval WHERE run_id = ANY(%s) AND status = 'pending'")
        deployment.until(lambda: deployment.sql(waiting, (runs,))[0][0] == RUNS, timeout=60,
                         what="every run waits for its approval")

        def status() -> dict:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/live/status/",
                                             headers={"Cookie": f"sessionid={cookies['adam']}"})
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())["sockets"]

        def events_of(run_id: int) -> list[int]:
            return [i for (i,) in deployment.sql(  # what a page is sent: all but the interpreter's inputs
                "SELECT id FROM forge_runs_runevent WHERE run_id = %s AND kind <> 'input' ORDER BY id", (run_id,))]

        def members(group: str) -> int:
            return redis.Redis.from_url(REDIS_URL).zcard(f"asgi-{deployment.name}:group:{group}")

        async def scenario():
            viewers = [Viewer(runs[i % RUNS]) for i in range(SOCKETS)]
            await asyncio.gather(*(viewer.watch(port, cookies["april"]) for viewer in viewers))  # all at once
            before = {run_id: await asyncio.to_thread(events_of, run_id) for run_id in runs}

            async def replayed():
                return all(received(viewer)[-1:] == before[viewer.run][-1:] for viewer in viewers)
            await until(replayed, timeout=60, what="every socket got its run's replay")
            joined = {run_id: await asyncio.to_thread(members, f"run-{run_id}") for run_id in runs}
            assert joined == {run_id: SOCKETS // RUNS for run_id in runs}
            counted = await asyncio.to_thread(status)
            assert counted["polling_only"] == 0 and counted["open"] == SOCKETS

            await asyncio.to_thread(deployment.query, (
                "from django.contrib.auth.models import User\nfrom forge.runs import services\n"
                "from forge.runs.models import Approval\napril = User.objects.get(username='april')\n"
                f"for approval in Approval.objects.filter(run_id__in={runs!r}):\n"
                "    services.approval_decide(user=april, approval=approval, decision='approve')\nresult = True"))
            ended = "SELECT count(*) FROM forge_runs_run WHERE id = ANY(%s) AND status = 'completed'"

            async def completed():
                return (await asyncio.to_thread(deployment.sql, ended, (runs,)))[0][0] == RUNS
            await until(completed, timeout=60, what="every run completed")
            expected = {run_id: await asyncio.to_thread(events_of, run_id) for run_id in runs}

            async def delivered():
                return all(received(viewer)[-1:] == expected[viewer.run][-1:] for viewer in viewers)
            await until(delivered, timeout=60, what="every socket got its run's last event")
            for viewer in viewers:
                assert received(viewer) == expected[viewer.run]  # every event of its run, in order, once
                assert viewer.closed is None
            assert (await asyncio.to_thread(status))["polling_only"] == 0

            await asyncio.to_thread(deployment.query, (  # another process: its signal reaches daphne through Redis
                "from django.contrib.auth.models import User\napril = User.objects.get(username='april')\n"
                "april.is_active = False\napril.save()\nresult = True"))

            async def closed():
                return all(viewer.closed is not None for viewer in viewers)
            await until(closed, timeout=5, what="every socket of the deactivated person closed")
            assert {viewer.closed for viewer in viewers} == {4403}

        asyncio.run(scenario())


async def join_at_once(layer, count: int) -> list:
    """`count` sockets of one process joining one group together; what each join raised, if anything."""
    channels = [await layer.new_channel() for _ in range(count)]
    try:
        return await asyncio.gather(*(layer.group_add("run-1", channel) for channel in channels),
                                    return_exceptions=True)
    finally:
        await layer.flush()


def test_five_hundred_joins_at_once_wait_for_a_connection_of_the_shared_pool_instead_of_failing():
    pooled = PooledRedisChannelLayer(hosts=[{"address": REDIS_URL, "max_connections": 50, "timeout": 20}],
                                     prefix=f"asgi-test-{uuid.uuid4().hex[:8]}")
    assert [error for error in asyncio.run(join_at_once(pooled, SOCKETS)) if error] == []
    plain = RedisChannelLayer(hosts=[{"address": REDIS_URL}], prefix=f"asgi-test-{uuid.uuid4().hex[:8]}")
    failed = [error for error in asyncio.run(join_at_once(plain, SOCKETS)) if error]  # what 500 sockets met
    assert failed and all(isinstance(error, MaxConnectionsError) for error in failed)
