"""`forge login`, the config file it keeps, and the refusals of the remote mode: a token expired or revoked
(exit 4), a server that cannot be reached (exit 5), a config others may read, --user with a server, and a write
retried after its answer was lost finding the first one's result (one run), against the Django app in this
process through httpx's WSGI transport."""

from __future__ import annotations

import json
import os
import socket
import stat
from datetime import timedelta

import httpx
import pytest
from django.core.wsgi import get_wsgi_application
from django.utils import timezone

from forge.accounts.models import ApiToken
from forge.accounts.tokens import token_create, token_revoke
from forge.cli_remote import config
from forge.runs.models import Run
from tests.forge.cli.helpers import remote

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the groups migrating made stay
URL = "http://testserver"
SCOPES = ["runs:read", "runs:write", "approvals:decide", "workflows:write", "governance:admin", "audit:read"]
FLOW = """
name: tiny
args:
  n: {type: integer, required: true}
steps:
  - id: one
    agent: mock
    command: say ${args.n}
"""


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FORGE_URL", raising=False)
    monkeypatch.delenv("FORGE_TOKEN", raising=False)
    return tmp_path


@pytest.fixture
def app():
    return httpx.WSGITransport(app=get_wsgi_application())


@pytest.fixture
def secret(admin_user):
    return token_create(user=admin_user, name="cli", scopes=SCOPES)[1]


def login(secret, tmp_path, app) -> tuple[int, str, str]:
    token_file = tmp_path / "token.txt"
    token_file.write_text(secret + "\n")
    return remote("login", URL, "--token-file", str(token_file), transport=app)


def test_login_checks_the_token_and_keeps_it_readable_by_its_owner_only(secret, home, app):
    code, out, _ = login(secret, home, app)
    path = home / "config" / "forge" / "config.json"
    assert (code, out.startswith(f"logged in to {URL} as adam (token {secret[:16]}…")) == (0, True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": URL, "token": secret}
    assert remote("logout") == (0, f"forgot the login stored in {path}\n", "")
    assert not path.exists() and config.stored() is None


def test_a_wrong_token_is_not_stored(home, app, db):
    code, _, err = login("forge_pat_" + "x" * 43, home, app)
    assert code == 4 and "forge: " in err
    assert not (home / "config" / "forge" / "config.json").exists()


def test_a_config_others_may_read_is_refused(secret, home, app):
    login(secret, home, app)
    path = home / "config" / "forge" / "config.json"
    os.chmod(path, 0o644)
    code, _, err = remote("workflows", transport=app)
    assert code == 4 and f"{path} may be read by others (mode 644)" in err and secret not in err


@pytest.mark.parametrize("how, says", [("expired", "expired"), ("revoked", "revoked")])
def test_an_expired_or_revoked_token_exits_4_saying_so(secret, home, app, admin_user, how, says):
    login(secret, home, app)
    token = ApiToken.objects.get(user=admin_user)
    if how == "expired":
        ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    else:
        token_revoke(user=admin_user, token=token)
    code, out, err = remote("workflows", "--json", transport=app)
    assert (code, out) == (4, "") and says in err.lower() and err.startswith("forge: ")


def test_an_unreachable_server_exits_5_with_a_sentence(monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("FORGE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("FORGE_TOKEN", "forge_pat_" + "x" * 43)
    code, out, err = remote("status", "1")
    assert (code, out) == (5, "") and err.startswith(f"forge: cannot reach the Forge server at http://127.0.0.1:{port}")


def test_user_is_refused_with_a_server(secret, home, app):
    login(secret, home, app)
    code, _, err = remote("--user", "olive", "workflows", transport=app)
    assert code == 2 and "--user acts as another person only on the server itself" in err


def test_a_write_whose_answer_was_lost_is_retried_with_its_key_and_makes_one_run(secret, home, app, tmp_path):
    login(secret, home, app)
    path = tmp_path / "tiny.yaml"
    path.write_text(FLOW)
    keys, dropped = [], []

    def lossy(request: httpx.Request) -> httpx.Response:
        response = app.handle_request(request)
        if request.method == "POST" and request.url.path == "/api/v1/runs":
            keys.append(request.headers["Idempotency-Key"])
            if not dropped:  # the server made the run and stored its answer; the client never hears it
                dropped.append(response)
                raise httpx.ReadError("connection reset by peer", request=request)
        return response

    code, out, err = remote("run", str(path), "--arg", "n=7", "--json", transport=httpx.MockTransport(lossy))
    assert code == 0, err
    run = Run.objects.get()
    assert json.loads(out)["run"] == run.pk  # the stored answer of the first try, replayed
    assert len(keys) == 2 and keys[0] == keys[1]  # the retry carried the first try's key
    assert run.args == {"n": 7}  # `--arg n=7` read as the integer the workflow declares, as locally
