"""Where the http and openai agents may connect: public addresses, and the host:port pairs an operator lists.

An agent's URL is set by admins, who are not the server's operators: left
open, it reaches the database, the cloud's metadata service and every other
listener inside the network. So a host is resolved once, every address it
resolves to is checked, and the caller connects to those checked addresses
only (a second lookup could answer differently: DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: inside a provider's network
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")


class EgressRefused(Exception):
    """A destination the allow-list does not name resolves to an address agents may not reach."""


@dataclass(frozen=True, slots=True)
class Destination:
    """A checked address to connect to: what `socket.socket(family)` and `connect(sockaddr)` take."""

    family: int
    sockaddr: tuple


def _host_key(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host


def _key(host: str, port: int) -> str:
    host = _host_key(host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def allow_list(entries: Iterable[str]) -> frozenset[str]:
    """The entries as canonical "host:port" strings ("[v6]:port" for an IPv6 address); idempotent.

    Raises:
        ValueError: an entry that is not host:port with a port from 1 to 65535.
    """
    allowed = set()
    for entry in entries:
        host, sep, port = str(entry).strip().rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        elif ":" in host:
            host = ""  # an IPv6 address must be bracketed, or its last group would pass for the port
        if not sep or not host or not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
            raise ValueError(f"egress allow-list entry {str(entry)[:100]!r} is not host:port "
                             "(an IPv6 address in brackets, e.g. [fd00::1]:443)")
        allowed.add(_key(host, int(port)))
    return frozenset(allowed)


def address_problem(address: IPAddress) -> str | None:
    """Why agents may not reach `address` unless it is listed, or None for a public address."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        problem = address_problem(embedded)
        return f"{problem} ({embedded} inside an IPv6 address)" if problem else None
    for kind, holds in (("a loopback", address.is_loopback), ("an unspecified", address.is_unspecified),
                        ("a link-local", address.is_link_local), ("a multicast", address.is_multicast),
                        ("a private", address.is_private), ("a shared (carrier-grade NAT)", address in _SHARED),
                        ("a reserved", address.is_reserved), ("a non-public", not address.is_global)):
        if holds:
            return f"{kind} address" + (", where cloud metadata services answer" if kind == "a link-local" else "")
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, 6to4, NAT64, IPv4-compatible), which is what is reached."""
    if address.version == 4:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _V4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def resolve(host: str, port: int, allowed: frozenset[str]) -> list[Destination]:
    """Resolve `host` once and return the addresses a connection may go to, all of them checked.

    `allowed` (from `allow_list`) opens a destination named by the URL's
    host:port (then every address it resolves to), or an address:port it
    resolves to.

    Raises:
        EgressRefused: one of the addresses may not be reached; the message names host:port and why.
        OSError: the host does not resolve (socket.gaierror).
    """
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    destinations = [Destination(family, sockaddr) for family, _, _, _, sockaddr in found
                    if family in (socket.AF_INET, socket.AF_INET6)]
    if not destinations:
        raise OSError(f"{host} has no IPv4 or IPv6 address")
    if _key(host, port) in allowed:
        return destinations
    for destination in destinations:
        address = ipaddress.ip_address(destination.sockaddr[0])
        problem = address_problem(address)
        if problem and _key(str(address), port) not in allowed:
            said = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # as the URL spells it
            why = (f"{host} is {problem}" if _host_key(host) == address.compressed
                   else f"{host} resolves to {address}, {problem}")
            raise EgressRefused(f"egress to {said} refused: {why}; only the server's operator can allow "
                                f"{said}")
    return destinations
