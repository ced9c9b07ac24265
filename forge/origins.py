"""The console's own web origins: the only pages whose scripts may open its websockets.

A browser sends a page's origin with a websocket handshake, and no CORS check follows: the server must compare
it, and compare all of it, since a page on another port, or on plain http under the same host name, is another
site that would otherwise open the socket with the person's cookies. The console's origins are:

- FORGE_PUBLIC_URL's;
- those of CSRF_TRUSTED_ORIGINS (a proxy setup lists them; `https://*.example.com` covers the subdomains, as
  Django's CSRF check reads it);
- each host of ALLOWED_HOSTS (`.example.com` covers the subdomains) on the scheme and port the socket came in
  on: ws is http, wss is https, the port is the server's. A `*` in ALLOWED_HOSTS names no origin, so that a
  console answering any host name does not accept every page served on its port.

Anything else, no Origin header, several, or one that is not a plain `scheme://host[:port]`, is refused.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import is_same_domain, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\]")

Origin = tuple[str, str, int]  # scheme, host (lower case; an IPv6 address in brackets), port


def parse(value: str) -> Origin | None:
    """The origin a browser sends (`scheme://host[:port]`, http or https, nothing more), or None."""
    if not value or len(value) > 300 or not value.isascii() or any(c <= " " or c == "\x7f" for c in value):
        return None
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    netloc = parts.netloc.lower()
    host = netloc.rsplit(":", 1)[0] if port is not None else netloc
    if (parts.scheme not in DEFAULT_PORTS or parts.path or parts.query or parts.fragment or "@" in netloc
            or not _HOST.fullmatch(host) or (port is not None and netloc != f"{host}:{port}")):
        return None
    return parts.scheme, host, port or DEFAULT_PORTS[parts.scheme]


def configured() -> list[Origin]:
    """FORGE_PUBLIC_URL's origin and CSRF_TRUSTED_ORIGINS'; a host `.example.com` stands for `*.example.com`."""
    origins = []
    for url in [settings.FORGE_PUBLIC_URL, *settings.CSRF_TRUSTED_ORIGINS]:
        parts = urlsplit(url.strip())
        wildcard = parts.netloc.startswith("*.")
        origin = parse(f"{parts.scheme}://{parts.netloc[2:] if wildcard else parts.netloc}")
        if origin is not None:
            origins.append((origin[0], "." + origin[1], origin[2]) if wildcard else origin)
    return origins


def allowed(origin: str | None, *, scheme: str = "ws", port: int | None = None) -> bool:
    """Whether a page of `origin` may open a socket that came in on `scheme` (ws or wss) and server `port`."""
    parsed = parse(origin or "")
    if parsed is None:
        return False
    for known in configured():
        if known[0] == parsed[0] and known[2] == parsed[2] and (
                known[1] == parsed[1] or (known[1].startswith(".") and is_same_domain(parsed[1], known[1]))):
            return True
    serving = "https" if scheme == "wss" else "http"
    hosts = [host for host in settings.ALLOWED_HOSTS if host != "*"]
    return port is not None and parsed[0] == serving and parsed[2] == port and validate_host(parsed[1], hosts)


class OriginValidator:
    """ASGI middleware: a websocket whose Origin is not the console's own is refused at the handshake (403)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            origins = [value.decode("latin-1") for name, value in scope.get("headers", []) if name == b"origin"]
            server = scope.get("server") or (None, None)
            if len(origins) != 1 or not allowed(origins[0], scheme=scope.get("scheme", "ws"), port=server[1]):
                return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
