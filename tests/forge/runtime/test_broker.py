"""forge/runtime/broker.py copies django-q2's brokers (TickingORM.take is ORM.dequeue's claim; TickingRedis
replaces Redis.dequeue) and relies on their attributes; forge/runtime/cluster.py subclasses its Sentinel.
pyproject.toml caps django-q2 below its next minor release; this fails when what was copied changes under an
install anyway, so it is read again, not trusted."""

from __future__ import annotations

import hashlib
import inspect
from importlib import metadata

import pytest
from django_q import cluster
from django_q.brokers import Broker
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf
from django_q.models import OrmQ

from forge.runtime.broker import TickingORM, TickingRedis

# The first 16 hex digits of the sha256 of each copied or relied-on function's source, as of django-q2 1.11.1.
DIGESTS = {
    Broker.__init__: "c9ba428d5f24a950",  # sets .connection and .list_key
    ORM.get_connection: "c9080441f31faf9b",
    ORM.timeout: "0ed681acbef33829",
    ORM.dequeue: "c4e346b7cb21e6ff",  # the claim TickingORM.take copies
    Redis.__init__: "c2d769f8370b20ea",  # the list key
    Redis.dequeue: "7144ae1b7f124673",  # what TickingRedis.dequeue replaces
    cluster.Sentinel.__init__: "6ddfa0bde90a4a73",  # forge/runtime/cluster.py: sets SIGTERM before start()
    cluster.Sentinel.stop: "d858ef90cdaaebf5",  # forge/runtime/cluster.py tells the workers first
}


def digest(function) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


@pytest.mark.parametrize("function", DIGESTS, ids=lambda f: f.__qualname__)
def test_what_the_broker_copies_is_as_it_was_copied(function):
    assert digest(function) == DIGESTS[function], (
        f"django-q2 {metadata.version('django-q2')} changed {function.__qualname__}, which forge/runtime/broker.py "
        f"copies or relies on: read the new source, adapt TickingORM/TickingRedis or the Sentinel, then record its "
        f"digest here")


def test_the_digest_sees_a_changed_line():
    def claim():
        return 1

    def claim_changed():
        return 2

    assert digest(claim) != digest(claim_changed)


def test_the_names_the_broker_uses_are_there():
    assert issubclass(TickingORM, ORM) and issubclass(TickingRedis, Redis)
    assert {"key", "lock", "payload", "id"} <= {field.name for field in OrmQ._meta.get_fields()}
    assert isinstance(Conf.BULK, int) and isinstance(Conf.POLL, (int, float))
