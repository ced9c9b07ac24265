"""Gateways on a real cluster, on both backends (spec 15): two fake gateways on 127.0.0.1, allowed by the
deployment's FORGE_EGRESS_ALLOW, go down and up again. A dispatch fails over to the second, the clusters' clock
probes the first unhealthy and healthy again, and a refused connection is retried three times before the attempt
fails. The waits are the deployment's settings (short here); the test waits on conditions only."""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import start_run
from tests.cluster.harness import Deployment
from tests.fake_gateway import WORKFLOW, FakeGateway

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgres"])
def routed(request, tmp_path):
    east, west = FakeGateway("east").up(), FakeGateway("west").up()
    deployment = Deployment(tmp_path, request.param,
                            FORGE_EGRESS_ALLOW=f"127.0.0.1:{east.port},127.0.0.1:{west.port}",
                            FORGE_GATEWAY_PROBE_S="0.3", FORGE_GATEWAY_PROBE_TIMEOUT_S="2",
                            FORGE_GATEWAY_RETRY_S="0.2,0.4,0.8")
    deployment.query(
        "from forge.governance.models import Agent, AgentGateway, Gateway\n"
        "agent = Agent.objects.create(name='routed', provider='http')\n"
        f"for position, (name, port, probed) in enumerate([('east', {east.port}, True), ('west', {west.port}, True),"
        f" ('lone', {east.port}, False)]):\n"
        "    row = Gateway.objects.create(name=name, url=f'http://127.0.0.1:{port}/dispatch', capabilities=['gpu'],\n"
        "                                 health_url=f'http://127.0.0.1:{port}/health' if probed else '')\n"
        "    if name != 'lone':\n"
        "        AgentGateway.objects.create(agent=agent, gateway=row, position=position)\n"
        "lone = Agent.objects.create(name='lonely', provider='http')\n"
        "AgentGateway.objects.create(agent=lone, gateway=Gateway.objects.get(name='lone'))\n"
        "result = True")
    path = tmp_path / "routed.yaml"
    path.write_text(WORKFLOW)
    yield deployment, east, west, path
    deployment.close()
    east.down()
    west.down()


def healthy(deployment, name: str):
    return deployment.sql("SELECT healthy FROM forge_governance_gateway WHERE name = %s", (name,))[0][0]


def contacts(deployment, run_id: int) -> list[tuple[str, str]]:
    rows = deployment.sql("SELECT data FROM forge_runs_runevent WHERE run_id = %s AND kind = 'gateway' ORDER BY id",
                          (run_id,))
    found = [json.loads(data) if isinstance(data, str) else data for (data,) in rows]
    return [(data["gateway"], data["outcome"]) for data in found]


def test_failover_and_the_probe_on_the_clusters_clock(routed):
    deployment, east, west, path = routed
    east.down()
    deployment.start_cluster()

    first = start_run(deployment, path)
    assert deployment.finished(first)["status"] == "completed"
    taken = contacts(deployment, first)
    # Failover at once, unless the clock's probe had already marked east unhealthy.
    assert taken in ([("east", "unreachable"), ("west", "answered")], [("west", "answered")]), taken

    deployment.until(lambda: healthy(deployment, "east") in (False, 0), timeout=60, what="the probe marks east down")
    east.up()
    deployment.until(lambda: healthy(deployment, "east") in (True, 1), timeout=60, what="the probe marks east up")
    again = start_run(deployment, path)
    assert deployment.finished(again)["status"] == "completed"
    assert contacts(deployment, again) == [("east", "answered")]


def test_a_refused_connection_is_retried_three_times_on_the_clusters_clock(routed):
    deployment, east, _, path = routed
    east.down()  # `lone` is at east's port and has no health URL: only its dispatches measure it
    path.write_text(WORKFLOW.replace("agent: routed", "agent: lonely"))
    deployment.start_cluster()

    run = start_run(deployment, path)

    assert deployment.finished(run)["status"] == "failed"
    assert [outcome for _, outcome in contacts(deployment, run)] == ["unreachable", "retry"] * 3 + ["unreachable"]
    step = deployment.step_rows(run)["work"]
    assert step["error_code"] == "gateway_unreachable"
    assert healthy(deployment, "lone") in (False, 0)
