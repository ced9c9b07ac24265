"""A gateway's hostile synchronous reply, through a whole run: the step fails with a clear message, the run
ends, nothing the gateway claimed is counted, and no worker raises (on SQLite and on PostgreSQL, where a
NUL or an integer past the column used to be a database error)."""

from __future__ import annotations

import json

import pytest

from forge.governance.models import TokenEvent
from forge.runs.models import RunInput
from tests.forge.api.test_gateway_sync_and_openai import HTTP_WORKFLOW, http_agent, start  # noqa: F401 - fixture
from tests.forge.conftest import steps_of

pytestmark = pytest.mark.django_db


def answer(literal_outputs: str = '{"summary": "s"}', **fields) -> bytes:
    body = json.dumps({"ok": True, "outputs": "@@", **fields})
    return body.replace('"@@"', literal_outputs).encode()


REPLIES = {
    "outputs-100000-deep": (answer('{"summary": ' + "[" * 100_000 + "]" * 100_000 + "}"), "nests deeper than 64"),
    "outputs-NaN": (answer('{"summary": NaN}'), "'outputs' hold a number that is not finite"),
    "outputs-NUL": (answer('{"summary": "a\\u0000b"}'), "'outputs' hold a string with a NUL"),
    "stdout-NUL": (answer(stdout="done\u0000"), "'stdout' holds a NUL character"),
    "tokens-2**64": (answer(tokens=2**64), "'tokens' must be at most"),
    "cost-1e9": (answer(cost=1e9), "'cost' must be at most"),
    "error_code-65-chars": (answer(ok=False, error_code="c" * 65), "'error_code' must be at most 64"),
    "duplicate-key": (b'{"ok": true, "outputs": {"summary": "s"}, "tokens": 1, "tokens": 99999999}',
                      "the key 'tokens' appears twice"),
    "another-attempt": (answer(attempt=7), "'attempt' names another call"),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_a_hostile_reply_fails_the_step_and_the_run_with_a_clear_message(operator, save_workflow, local_server,
                                                                        http_agent, name,
                                                                        django_capture_on_commit_callbacks):
    body, says = REPLIES[name]
    local_server.reply = lambda seen: (200, body)

    run = start(operator, save_workflow(HTTP_WORKFLOW), django_capture_on_commit_callbacks)

    remote = steps_of(run)["remote"]
    assert (run.status, remote.status, remote.error_code) == ("failed", "failed", "agent_error")
    assert says in remote.error
    assert "\x00" not in remote.error + remote.stdout and remote.outputs in (None, {})
    assert steps_of(run)["after"].status != "completed"
    assert not TokenEvent.objects.exists()
    assert not RunInput.objects.filter(run=run, processed_at=None).exists()
