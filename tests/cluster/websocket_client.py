"""A small websocket client on asyncio streams (RFC 6455), for tests that open hundreds of sockets at once.

The installed clients do not fit: autobahn's asyncio flavour cannot load in a process where Django has loaded
daphne (txaio is already set to Twisted there), and a browser caps a profile at a few hundred sockets.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 1.3
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


class Socket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, path: str, headers: dict[str, str]) -> Socket:
        """A socket to 127.0.0.1:`port`; ConnectionError when the handshake is not answered with 101."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13",
                 *(f"{name}: {value}" for name, value in headers.items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").strip().split("\r\n")
        answer = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        if not status.startswith("HTTP/1.1 101") or answer.get("sec-websocket-accept") != accept:
            writer.close()
            raise ConnectionError(status)
        return cls(reader, writer)

    async def receive(self) -> str | int:
        """The next text message, or the close code (an int) once the server closed; pings are answered."""
        message = b""
        while True:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(length)
            opcode = first & 0x0F
            if opcode == PING:
                self.send(PONG, payload)
            elif opcode == CLOSE:
                return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
            elif opcode != PONG:
                message += payload
                if first & 0x80:
                    return message.decode()

    def send(self, opcode: int, payload: bytes) -> None:
        """A client's frames are masked (RFC 6455 5.3)."""
        mask = os.urandom(4)
        length = len(payload)
        header = bytes([0x80 | opcode]) + (bytes([0x80 | length]) if length < 126 else
                                           bytes([0x80 | 126]) + struct.pack("!H", length))
        self.writer.write(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def close(self) -> None:
        self.writer.close()
