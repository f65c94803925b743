"""What the Python fakes (tests/fakes/modal_fake.py, boxd_fake.py) share:
a minimal HTTP/1.1 JSON server loop for their control routes (and boxd's key
exchange), and serving until whoever started the fake closes its stdin.
Imported by name: a fake runs as a script from this folder."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

async def serve_http(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    respond: Callable[[str, str, bytes], tuple[int, Any, dict[str, str]]],
    pending: bytes,
) -> None:
    """A minimal HTTP/1.1 JSON server loop (keep-alive, content-length or chunked bodies)."""
    reasons = {
        200: "OK",
        400: "Bad Request",
        401: "Unauthorized",
        404: "Not Found",
        405: "Method Not Allowed",
        429: "Too Many Requests",
    }
    try:
        while True:
            head = pending + await reader.readuntil(b"\r\n\r\n")  # pending: the bytes read to tell HTTP/2 apart
            pending = b""
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            if headers.get("expect", "").lower() == "100-continue":
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = await read_body(reader, headers)
            status, payload, extra = respond(method, target, body)
            data = json.dumps(payload).encode()
            keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            more = "".join(f"{name}: {value}\r\n" for name, value in extra.items())
            writer.write(
                f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\ncontent-type: application/json\r\n{more}"
                f"content-length: {len(data)}\r\nconnection: {'keep-alive' if keep else 'close'}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
            if not keep:
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length", "0"))
    return await reader.readexactly(length) if length else b""



async def serve_until_stdin_closes(started: Mapping[str, str], close: Callable[[], Awaitable[None]]) -> None:
    """Prints the fake's one JSON line (``started``), then serves until
    whoever started it closes its stdin (or exits), then ``close``s it."""
    sys.stdout.write(json.dumps(started) + "\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, os.read, sys.stdin.fileno(), 65536):
        pass
    await close()
