"""The cast every console test uses, and helpers that drive runs without a cluster.

django-q2 runs tasks inline here (`sync`). Tasks are enqueued on commit, so
with the plain `db` fixture (a transaction that never commits) nothing runs
by itself: `fast_forward` advances the run and brings delayed events
forward. Tests that need the real on-commit path use
`django_db(transaction=True)`.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

from engine.executors.sandbox import Sandbox
from django.utils import timezone

from forge.accounts import audit_trail
from forge.governance.context import forget_configuration
from forge.runs import compiled
from forge.runtime import bridge
from forge.runs.models import Run, RunInput, StepResult
from forge.runtime.rounds import advance
from forge.workflows.services import workflow_version_save


@pytest.fixture(scope="session", autouse=True)
def people_unaudited():
    """The accounts tests make for their cast, and the groups migrating sets up, are not audited here
    (forge/accounts/audit_trail.py), so a test reads only the events of what it does; a test about auditing
    people asks for `people_audited`."""
    audit_trail.disconnect()
    yield
    audit_trail.connect()


@pytest.fixture
def people_audited(people_unaudited):
    audit_trail.connect()
    yield
    audit_trail.disconnect()


def member(username: str, *groups: str) -> User:
    user = User.objects.create_user(username, password="pw-" + username)
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def operator(db):
    return member("olive", "Operators")


@pytest.fixture
def approver(db):
    return member("april", "Approvers")


@pytest.fixture
def admin_user(db):
    return member("adam", "Admins")


@pytest.fixture
def outsider(db):
    return member("oscar")


@pytest.fixture
def unsandboxed(settings):
    """Shell steps that read a file the test changes outside their run, which their sandbox would hide."""
    settings.FORGE_SHELL_SANDBOX = Sandbox(enabled=False)


@pytest.fixture
def save_workflow(db):
    def save(source: str, user=None):
        return workflow_version_save(user=user, source=source)
    return save


def steps_of(run: Run) -> dict[str, StepResult]:
    """The run's step rows by step id."""
    return {row.step: row for row in StepResult.objects.filter(run=run)}


def fast_forward(run: Run, *, rounds: int = 200) -> Run:
    """Virtual time: feed the earliest delayed event now, again and again, until the inbox is empty."""
    for _ in range(rounds):
        earliest = RunInput.objects.filter(run=run, processed_at=None).order_by("due_at").first()
        if earliest is None:
            break
        RunInput.objects.filter(run=run, processed_at=None, due_at=earliest.due_at).update(due_at=timezone.now())
        advance(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture(autouse=True)
def no_stored_server(tmp_path_factory, monkeypatch):
    """The `forge` command acts locally in every test unless it says otherwise: a developer's own `forge login`
    (or FORGE_URL in their shell) would otherwise send the tests' commands to their server."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("FORGE_URL", raising=False)
    monkeypatch.delenv("FORGE_TOKEN", raising=False)


@pytest.fixture(autouse=True)
def fresh_rate_windows():
    """Each test starts with the API's rate-limit windows empty: they live in the cache, which outlives a test's
    database, so a suite's anonymous requests would otherwise share one window per address. (Only the process's
    own memory: clearing a Redis cache would empty the database the cluster and the channel layer share.)"""
    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()


@pytest.fixture(autouse=True)
def fresh_runtime_caches():
    """Forget the runtime's per-process caches (compiled workflows, interpreters, governance) around every test.

    They are keyed by version and run ids, which the database hands out again
    after a test's transaction is rolled back: without this, a run of one test
    is driven by a workflow or an interpreter cached by an earlier test, or
    governed by agents that were rolled back.
    """
    def clear():
        with bridge._LOCK:
            bridge._INTERPRETERS.clear()
        with compiled._LOCK:
            compiled._WORKFLOWS.clear()
        forget_configuration()

    clear()
    yield
    clear()
