"""A run's Server-Sent Events against a real daphne and cluster, embedded and on PostgreSQL + Redis: a script
follows a run from its start, the approval is decided by another process, every event arrives once and in
order and the stream ends after the run's last; a client that dropped its connection resumes from its
Last-Event-ID with exactly what it missed; an outsider gets a 403 problem and no stream.

On PostgreSQL the streams' re-read is 10 minutes: there, every live event can only come through the run's
channel group (the cluster's wake-ups through Redis)."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis

from tests.browser.console import free_port
from tests.cluster.event_stream_client import EventStream
from tests.cluster.harness import REDIS_URL, deployed
from tests.forge.console_pages.conftest import APPROVAL

pytestmark = pytest.mark.slow
WAIT_S = 120

PREPARE = (
    "from django.contrib.auth.models import Group, User\nfrom django.test import Client\n"
    "from forge.runs import services\nfrom forge.workflows.services import workflow_version_save\n"
    "people = {}\nfor name, group in (('olive', 'Operators'), ('april', 'Approvers'), ('oscar', None)):\n"
    "    people[name] = User.objects.create(username=name)\n"
    "    if group:\n        people[name].groups.add(Group.objects.get(name=group))\n"
    f"run = services.run_start(user=people['olive'], version=workflow_version_save(user=None, source={APPROVAL!r}))\n"
    "cookies = {}\nfor name in ('april', 'oscar'):\n"
    "    client = Client()\n    client.force_login(people[name])\n"
    "    cookies[name] = client.cookies['sessionid'].value\n"
    "result = {'run': run.pk, 'cookies': cookies}")
DECIDE = ("from django.contrib.auth.models import User\nfrom forge.runs import services\n"
          "from forge.runs.models import Approval\n"
          "services.approval_decide(user=User.objects.get(username='april'), "
          "approval=Approval.objects.get(run_id={run}), decision='approve')\nresult = True")


@pytest.mark.parametrize("backend, poll", [("sqlite", None), ("postgres", "600")])
def test_a_script_follows_a_run_to_its_end_and_resumes_after_a_dropped_connection(backend, poll):
    env = {"FORGE_LIVE_POLL_S": poll} if poll else {}
    with deployed("forge-sse-", backend, FORGE_PYTHON_CALLABLES="forge.runs.callables.noop", **env) as deployment:
        prepared = deployment.query(PREPARE)
        run, cookies = prepared["run"], prepared["cookies"]
        deployment.start_cluster()
        port = free_port()
        deployment.start_daphne(port)
        deployment.until(lambda: deployment.sql("SELECT count(*) FROM forge_runs_approval WHERE run_id = %s AND "
                                                "status = 'pending'", (run,))[0][0], timeout=WAIT_S,
                         what="the run waits for its approval")

        def events_of() -> list[int]:
            return [i for (i,) in deployment.sql(
                "SELECT id FROM forge_runs_runevent WHERE run_id = %s AND kind <> 'input' ORDER BY id", (run,))]

        def members(group: str) -> int:
            return redis.Redis.from_url(REDIS_URL).zcard(f"asgi-{deployment.name}:group:{group}")

        async def scenario():
            april = {"Cookie": f"sessionid={cookies['april']}"}
            before = await asyncio.to_thread(events_of)
            follower = EventStream(port, run, april, after=0).start()
            dropped = EventStream(port, run, april, after=0).start()
            assert await follower.until(before[-1], timeout=WAIT_S) == before
            await dropped.until(before[1], timeout=WAIT_S)
            if backend == "postgres":
                assert members(f"run-{run}") == 2  # each stream joined with a channel of its own
            await dropped.drop()
            seen = dropped.ids()[-1]

            await asyncio.to_thread(deployment.query, DECIDE.format(run=run))
            await asyncio.to_thread(deployment.finished, run, timeout=WAIT_S)
            every = await asyncio.to_thread(events_of)
            await asyncio.wait_for(follower.ended.wait(), WAIT_S)
            assert follower.ids() == every  # once each, in order, and then the stream ended
            assert (follower.events[-1]["event"], follower.events[-1]["data"]["data"]["status"]) == ("run",
                                                                                                  "completed")
            resumed = EventStream(port, run, {**april, "Last-Event-ID": str(seen)}, after=0).start()
            await asyncio.wait_for(resumed.ended.wait(), WAIT_S)
            assert resumed.ids() == [i for i in every if i > seen]

            outsider = EventStream(port, run, {"Cookie": f"sessionid={cookies['oscar']}"}).start()
            await asyncio.wait_for(outsider.ended.wait(), WAIT_S)
            assert (outsider.status, outsider.content_type) == (403, "application/problem+json")
            assert json.loads(outsider.body)["status"] == 403 and not outsider.events
            if backend == "postgres":  # every stream, ended or dropped, left the run's group
                await asyncio.to_thread(deployment.until, lambda: members(f"run-{run}") == 0, timeout=WAIT_S,
                                        what="the streams left the run's group")

        asyncio.run(scenario())
