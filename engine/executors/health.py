"""A gateway's health check: one GET of its health URL, through the same egress checks as a dispatch.

Healthy means the gateway answered 2xx within the timeout. What went wrong
names the host and port only, as every message of `httpcall` does: a path or
a query may carry credentials.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

from engine.executors.egress import EgressRefused, allow_list, resolve
from engine.executors.httpcall import _PinnedHTTP, _PinnedHTTPS, _port, check_url, where


def check_health(url: str, *, timeout_s: float, egress_allow: Iterable[str] = ()) -> str | None:
    """GET `url` and say what was wrong with the answer.

    Args:
        url: the gateway's health URL (absolute http or https).
        timeout_s: the bound on the whole check (a gateway dripping its answer a byte at a time is cut off).
        egress_allow: "host:port" entries that may be reached although non-public (`egress.allow_list`).

    Returns:
        None when the gateway answered 2xx, else why it is not healthy, as a sentence.
    """
    try:
        check_url(url)
        allowed = allow_list(egress_allow)
    except ValueError as exc:
        return str(exc)
    parts = urlsplit(url)
    try:
        destinations = resolve(parts.hostname, _port(url), allowed)
    except EgressRefused as exc:
        return str(exc)
    except OSError as exc:
        return f"could not resolve {where(url)}: {exc.strerror or exc}"
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    connection = kind(parts.hostname, _port(url), destinations, timeout=timeout_s)
    expired = threading.Event()
    watchdog = threading.Timer(timeout_s, _expire, (connection, expired))
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            connection.connect()
        except TimeoutError:
            return f"could not connect to {where(url)} within {timeout_s:g} s"
        except ssl.SSLError as exc:
            return f"TLS with {where(url)} failed: {exc}"[:300]
        except OSError as exc:
            return f"could not connect to {where(url)}: {exc.strerror or exc}"
        try:
            connection.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                               headers={"Accept": "application/json"})
            response = connection.getresponse()
            response.read(65536)
        except TimeoutError:
            return f"{where(url)} did not answer within {timeout_s:g} s"
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set():
                return f"{where(url)} did not answer within {timeout_s:g} s"
            return f"the connection to {where(url)} broke: {str(exc) or type(exc).__name__}"[:300]
        if expired.is_set():
            return f"{where(url)} did not answer within {timeout_s:g} s"
        if not 200 <= response.status < 300:
            return f"{where(url)} answered HTTP {response.status}"
        return None
    finally:
        watchdog.cancel()
        connection.close()


def _expire(connection: http.client.HTTPConnection, expired: threading.Event) -> None:
    """The check's time is up: wake its blocking read (each read alone is bounded, not the exchange)."""
    expired.set()
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
