"""Agents reach public addresses only, unless FORGE_EGRESS_ALLOW lists the host:port: the console's own database,
the cloud's metadata service and other internal listeners stay out of an admin-set URL's reach."""

from __future__ import annotations

import socket

import pytest

from forge.governance.models import Agent, AgentGateway, Gateway
from forge.runs import services
from tests.forge.conftest import steps_of
from tests.forge.test_deployment_checks import manage

WORKFLOW = """
name: probe
steps:
  - id: remote
    agent: prober
    command: "SELECT 1"
    timeout: 30
"""


@pytest.fixture
def connects(monkeypatch):
    """Every address:port an outgoing connection of this process went to."""
    attempts = []
    real_connect = socket.socket.connect

    def connect(sock, address):
        attempts.append(tuple(address[:2]))
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["url", "gateway"])
def test_an_http_agent_aimed_at_the_database_port_is_refused_and_nothing_connects(
        operator, save_workflow, django_capture_on_commit_callbacks, connects, where):
    gateway = Gateway.objects.create(name="db", url="http://127.0.0.1:5432/") if where == "gateway" else None
    prober = Agent.objects.create(name="prober", provider="http",
                                  config={} if gateway else {"url": "http://127.0.0.1:5432/?password=hunter2"})
    if gateway is not None:
        AgentGateway.objects.create(agent=prober, gateway=gateway)

    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(user=operator, version=save_workflow(WORKFLOW))
    run.refresh_from_db()

    remote = steps_of(run)["remote"]
    assert (run.status, remote.status, remote.error_code) == ("failed", "failed", "egress_refused")
    assert remote.error.startswith("egress to 127.0.0.1:5432 refused: 127.0.0.1 is a loopback address")
    assert remote.error.endswith("only the server's operator can allow 127.0.0.1:5432")
    assert "FORGE_" not in remote.error and "hunter2" not in remote.error
    assert not [address for address in connects if address[1] == 5432]


def test_the_allow_list_is_read_from_the_environment(tmp_path):
    done = manage("shell", "-c", "from django.conf import settings; print(sorted(settings.FORGE_EGRESS_ALLOW))",
                  tmp_path=tmp_path, FORGE_EGRESS_ALLOW="Gateway.Internal:8443, [fd00::1]:443,")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['[fd00::1]:443', 'gateway.internal:8443']"


def test_an_allow_list_entry_without_a_port_fails_loudly(tmp_path):
    done = manage("check", tmp_path=tmp_path, FORGE_EGRESS_ALLOW="gateway.internal")
    assert done.returncode != 0
    assert "FORGE_EGRESS_ALLOW: egress allow-list entry 'gateway.internal' is not host:port" in done.stderr
