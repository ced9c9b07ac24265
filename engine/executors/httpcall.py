"""One JSON POST bounded in total time, stoppable by a cancel: the transport of the http and openai agents.

The request runs in a daemon thread while the caller waits on it or on the
cancel, so a cancelled or timed-out step returns at once; the socket is then
shut down so the thread ends soon after. Messages name the host and port,
never the path, the query or a header value: those may carry credentials.

The host is resolved once and checked by `egress`; the socket connects to
those checked addresses while TLS still verifies the URL's host name (SNI
and certificate) and `Host:` names it too. Redirects are not followed.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from engine.executors.base import StepResult
from engine.executors.egress import Destination, EgressRefused, allow_list, resolve

MAX_REPLY_BYTES = 1_048_576
_CHUNK = 65536
_POLL_S = 0.05
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Reply:
    """The HTTP status and the body (at most `MAX_REPLY_BYTES`) of a completed request."""

    status: int
    body: bytes


def check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers as a dict, refused early when http.client would refuse them later.

    http.client puts an invalid value into its error message, which could
    leak a credential; this names only the header.

    Raises:
        ValueError: a name that is not an HTTP token or a value with a control character.
    """
    checked = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ValueError(f"header name {name!r} is not a valid HTTP header name")
        if not isinstance(value, str) or _BAD_VALUE.search(value):
            raise ValueError(f"the value of header {name!r} must be a string without line breaks "
                             "or control characters")
        checked[name] = value
    return checked


def check_url(url: str) -> None:
    """Raises ValueError unless `url` is an absolute http or https URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("the URL must be an absolute http:// or https:// URL")
    _ = parts.port  # raises ValueError for a port that is not a number in range


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def where(url: str) -> str:
    """`host:port` of a URL, the part of it safe to put in a message."""
    host = urlsplit(url).hostname or ""
    return f"[{host}]:{_port(url)}" if ":" in host else f"{host}:{_port(url)}"


def _connect(destinations: list[Destination], timeout: float) -> socket.socket:
    """A TCP socket connected to the first of the checked addresses that answers (each gets `timeout`)."""
    error: OSError = OSError("no address to connect to")
    for destination in destinations:
        sock = socket.socket(destination.family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(destination.sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    raise error


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to the URL's host that connects only to addresses `egress` checked."""

    def __init__(self, host: str, port: int, destinations: list[Destination], *, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.destinations = destinations

    def connect(self) -> None:
        self.sock = _connect(self.destinations, self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """As `_PinnedHTTP`, with TLS verifying the URL's host name, not the address."""

    def __init__(self, host: str, port: int, destinations: list[Destination], *, timeout: float):
        self.tls = ssl.create_default_context()
        self.tls.set_alpn_protocols(["http/1.1"])
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.destinations = destinations

    def connect(self) -> None:
        sock = _connect(self.destinations, self.timeout)
        try:
            self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


class _Call(threading.Thread):
    def __init__(self, url: str, body: bytes, headers: dict[str, str], connect_timeout_s: float,
                 deadline: float, max_bytes: int, allowed: frozenset[str]):
        super().__init__(daemon=True, name="forge-http-call")
        self.url, self.body, self.headers = url, body, headers
        self.connect_timeout_s, self.deadline, self.max_bytes = connect_timeout_s, deadline, max_bytes
        self.allowed = allowed
        self.connection: http.client.HTTPConnection | None = None
        self.outcome: Reply | StepResult | None = None

    def run(self) -> None:
        try:
            self.outcome = self._call()
        except Exception as exc:  # a daemon thread must hand back every failure, not die with it
            self.outcome = StepResult.failure(f"the request to {where(self.url)} failed: "
                                              f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            if self.connection is not None:
                self.connection.close()

    def _call(self) -> Reply | StepResult:
        parts = urlsplit(self.url)
        try:
            destinations = resolve(parts.hostname, _port(self.url), self.allowed)
        except EgressRefused as exc:
            return StepResult.failure(str(exc), "egress_refused")
        except OSError as exc:
            return StepResult.failure(f"could not connect to {where(self.url)}: {exc.strerror or exc}",
                                      "gateway_unreachable")
        left = self.deadline - time.monotonic()
        connect_s = min(self.connect_timeout_s, left)
        kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
        self.connection = kind(parts.hostname, _port(self.url), destinations, timeout=max(connect_s, 0.001))
        try:
            self.connection.connect()
        except TimeoutError:
            if connect_s < left:
                return StepResult.failure(f"could not connect to {where(self.url)} within "
                                          f"{self.connect_timeout_s:g} s", "gateway_unreachable")
            return _TIMED_OUT
        except ssl.SSLError as exc:
            return StepResult.failure(f"TLS with {where(self.url)} failed: {exc}")
        except OSError as exc:
            return StepResult.failure(f"could not connect to {where(self.url)}: "
                                      f"{exc.strerror or exc}", "gateway_unreachable")
        try:
            # after the connect one socket timeout bounds the whole exchange: the step's remaining time
            self.connection.sock.settimeout(max(self.deadline - time.monotonic(), 0.001))
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            self.connection.request("POST", path, body=self.body, headers=self.headers)
            response = self.connection.getresponse()
            length = response.getheader("Content-Length")
            success = 200 <= response.status < 300
            if success and length and length.isdigit() and int(length) > self.max_bytes:
                return _too_large(self.max_bytes)
            body = bytearray()
            while len(body) <= self.max_bytes and (chunk := response.read(_CHUNK)):
                body += chunk
            if len(body) > self.max_bytes:
                # an error status is reported by its status; only a result that does not fit is refused
                if not success:
                    return Reply(response.status, bytes(body[:self.max_bytes]))
                return _too_large(self.max_bytes)
            return Reply(response.status, bytes(body))
        except TimeoutError:
            return _TIMED_OUT
        except (OSError, http.client.HTTPException) as exc:
            detail = str(exc) or type(exc).__name__
            return StepResult.failure(f"the connection to {where(self.url)} broke: {detail[:200]}")

    def abort(self) -> None:
        """Wake the thread out of a blocking send or receive; a connect ends at its own timeout."""
        sock = self.connection.sock if self.connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# What the call thread reports when the step's time ran out; post_json says it with the step's timeout.
_TIMED_OUT = StepResult.failure("timed out", "timeout")


def _too_large(limit: int) -> StepResult:
    size = "1 MiB" if limit == MAX_REPLY_BYTES else f"{limit} bytes"
    return StepResult.failure(f"reply larger than {size}")


def post_json(url: str, payload: Any, *, headers: Mapping[str, str], timeout_s: float, cancel: threading.Event,
              connect_timeout_s: float = 10.0, max_bytes: int = MAX_REPLY_BYTES,
              egress_allow: Iterable[str] = ()) -> Reply | StepResult:
    """POST `payload` as JSON and return the reply, or the failure that ended the call.

    Args:
        url: an absolute http(s) URL.
        payload: a value `json.dumps` accepts.
        headers: sent after `Content-Type: application/json` (checked by `check_headers`).
        timeout_s: the bound on the whole call: connect, send and receive.
        cancel: when set, the call is abandoned at once.
        connect_timeout_s: the bound on the connect alone.
        max_bytes: the largest reply body accepted.
        egress_allow: "host:port" entries (`egress.allow_list`) that may be reached although they are, or
            resolve to, loopback, private, link-local or other non-public addresses.

    Returns:
        A `Reply` for any HTTP status (an error status's body cut at
        `max_bytes`), or a failed `StepResult` with error_code "timeout",
        "cancelled", "egress_refused" (a non-public address not allowed; nothing
        was sent), "gateway_unreachable" (refused, unknown host, connect
        timeout) or "agent_error" (TLS failure, broken connection, a 2xx
        reply over `max_bytes`, a bad allow-list entry).
    """
    if cancel.is_set():
        return StepResult.failure("cancelled", "cancelled")
    try:
        allowed = allow_list(egress_allow)
    except ValueError as exc:
        return StepResult.failure(str(exc))
    try:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        return StepResult.failure(f"the request cannot be sent as JSON: {exc}")
    sent = {"Content-Type": "application/json", "Accept": "application/json"}
    sent.update((k, v) for k, v in headers.items() if k.lower() not in ("content-type", "content-length"))
    deadline = time.monotonic() + timeout_s
    call = _Call(url, body, sent, connect_timeout_s, deadline, max_bytes, allowed)
    call.start()
    while call.is_alive():
        if cancel.is_set():
            call.abort()
            return StepResult.failure("cancelled", "cancelled")
        left = deadline - time.monotonic()
        if left <= 0:
            call.abort()
            return StepResult.failure(f"timed out after {timeout_s:g} s", "timeout")
        call.join(min(_POLL_S, left))
    if call.outcome is None:
        return StepResult.failure("the request ended without an outcome")
    if call.outcome is _TIMED_OUT:
        return StepResult.failure(f"timed out after {timeout_s:g} s", "timeout")
    return call.outcome
