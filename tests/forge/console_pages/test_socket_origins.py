"""The live sockets open only from the console's own pages: scheme, host and port of the handshake's Origin must
be the console's (forge/origins.py), or the socket is refused before anything is read, cookies or not."""

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from tests.forge.console_pages.test_run_stream import login, socket_to, sync

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Not an origin a browser sends for a page of this console (served on ws, port 8000, FORGE_PUBLIC_URL's default).
REFUSED = [
    "http://127.0.0.1:9999",  # another service on the same host name
    "https://127.0.0.1:8000",  # another scheme
    "http://127.0.0.1",  # another port (80)
    "http://evil.example:8000",  # another host
    "http://127.0.0.1.evil.example:8000",
    "null",  # a sandboxed frame, a file: page
    "",
    "127.0.0.1:8000",
    "http://",
    "http://127.0.0.1:8000/",
    "http://127.0.0.1:8000/ws/live/",
    "http://127.0.0.1:8000?x=1",
    "http://127.0.0.1:8000#x",
    "http://olive@127.0.0.1:8000",
    "http://127.0.0.1:08000",
    "http://127.0.0.1:99999",
    "http://127.0.0.1:80x",
    "http://127.0.0.1.:8000",
    "http://127.0.0.1:8000\x00",
    "http://127.0.0.1:8000 http://evil.example",
    "javascript:alert(1)",
    "ws://127.0.0.1:8000",
    "file:///etc/passwd",
    "http://" + "a" * 5000 + ":8000",
    "http://127.0.0.1:8000\xe9",
]


async def opens(user, origin: bytes | None, path="/ws/live/", *, scheme="ws", port=8000, extra=()) -> bool:
    """Whether a socket with this Origin (None: without one) is let through to the consumer."""
    headers = [h for h in await sync_to_async(login)(user) if h[0] != b"origin"]
    headers += [(b"origin", origin)] if origin is not None else []
    socket = socket_to(path, headers=headers + list(extra))
    socket.scope["server"], socket.scope["scheme"] = ["127.0.0.1", port], scheme
    connected, _ = await socket.connect(timeout=30)
    if connected:
        await socket.disconnect()
    return connected


@sync
async def test_the_console_s_own_scheme_host_and_port_are_let_through(approver):
    assert await opens(approver, b"http://127.0.0.1:8000")
    assert await opens(approver, b"http://localhost:8000")
    assert await opens(approver, b"http://LOCALHOST:8000")
    assert await opens(approver, b"http://[::1]:8000")
    assert await opens(approver, b"http://localhost:8123", port=8123)  # ALLOWED_HOSTS on the serving port
    assert await opens(approver, b"https://127.0.0.1:8443", scheme="wss", port=8443)
    assert await opens(approver, b"https://127.0.0.1", scheme="wss", port=443)


@sync
async def test_every_other_origin_is_refused_on_both_sockets(approver, run):
    for path in ("/ws/live/", f"/ws/runs/{run.pk}/"):
        let_through = [origin for origin in REFUSED if await opens(approver, origin.encode("latin-1"), path)]
        assert let_through == [], path
        assert not await opens(approver, None, path), "no Origin at all"
        assert not await opens(approver, b"\xff\xfe", path)


@sync
async def test_a_page_on_plain_http_cannot_reach_an_https_console(approver):
    assert await opens(approver, b"https://localhost:8443", scheme="wss", port=8443)
    assert not await opens(approver, b"http://localhost:8443", scheme="wss", port=8443)


@sync
async def test_two_origins_are_refused(approver):
    assert not await opens(approver, b"http://evil.example:8000", extra=[(b"origin", b"http://127.0.0.1:8000")])


@override_settings(ALLOWED_HOSTS=["*"])
@sync
async def test_a_console_answering_every_host_name_still_knows_its_own_origin(approver):
    assert await opens(approver, b"http://127.0.0.1:8000")  # FORGE_PUBLIC_URL's
    assert not await opens(approver, b"http://evil.example:8000")
    assert not await opens(approver, b"http://localhost:8123", port=8123)


@override_settings(CSRF_TRUSTED_ORIGINS=["https://forge.example.com", "https://*.example.org"],
                   FORGE_PUBLIC_URL="http://127.0.0.1:8000")
@sync
async def test_behind_a_proxy_the_trusted_origins_are_let_through(approver):
    assert await opens(approver, b"https://forge.example.com")  # daphne still sees ws on its own port
    assert await opens(approver, b"https://console.example.org")
    assert await opens(approver, b"https://example.org")
    assert not await opens(approver, b"http://forge.example.com")
    assert not await opens(approver, b"https://forge.example.com:8443")
    assert not await opens(approver, b"https://console.example.org:8443")
    assert not await opens(approver, b"https://example.org.evil.example")


@override_settings(FORGE_PUBLIC_URL="https://console.example.net/forge")
@sync
async def test_the_public_url_s_origin_is_let_through(approver):
    assert await opens(approver, b"https://console.example.net")
    assert await opens(approver, b"https://console.example.net:443")
    assert not await opens(approver, b"http://console.example.net")
    assert not await opens(approver, b"https://console.example.net:8443")
