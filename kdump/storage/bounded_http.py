"""One HTTP request, bounded every way a hostile server could stretch it: a total deadline
(connect, headers and body together, however slowly they trickle) and a byte limit on the
body (read in pieces, never whole). For the Schema Registry (``schemas.http_get``) and the
credential sources of kdump's own S3 listing (``storage.aws_keys``, ``storage.aws_sts``).

http.client rather than urllib: urllib's timeout bounds each socket read, not the request,
and its redirects go anywhere (none are followed here). Proxies are honoured as urllib
honours them (``http_proxy``, ``https_proxy``, ``no_proxy``) when asked for.
"""

from __future__ import annotations

import http.client
import io
import socket
import time
import urllib.parse
import urllib.request
from typing import Any


class TooLarge(Exception):
    """A body past the byte limit: ``declared``, the size its header gave (None: read past it)."""

    def __init__(self, declared: int | None) -> None:
        super().__init__(declared)
        self.declared = declared


class _Deadline(io.RawIOBase):
    """A socket's reads, each given only the time left before the request's deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        self.sock.settimeout(left)
        return self.sock.recv_into(b)


class _DeadlineSocket:
    """What HTTPResponse reads from: ``makefile`` gives the deadline-bound reader."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Deadline(self.sock, self.deadline))

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(max(0.001, self.deadline - time.monotonic()))
        self.sock.sendall(data)

    def close(self) -> None:
        pass            # http.client closes the connection before the body is read: ``close`` closes the socket


def connection(parts: urllib.parse.SplitResult, deadline: float, proxies: bool = True) -> http.client.HTTPConnection:
    """A connection to ``parts``' host whose every read and write ends by ``deadline``."""
    host, port = parts.hostname or "", parts.port
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    proxy = urllib.request.getproxies().get(parts.scheme) if proxies else None
    timeout = max(0.001, deadline - time.monotonic())
    if proxy and not urllib.request.proxy_bypass(host):
        p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        conn = cls(p.hostname or "", p.port, timeout=timeout)
        conn.set_tunnel(host, port)
    else:
        conn = cls(host, port, timeout=timeout)
    conn.connect()
    conn.sock = _DeadlineSocket(conn.sock, deadline)
    return conn


def close(conn: http.client.HTTPConnection | None) -> None:
    if conn is not None:
        held: Any = conn.sock
        conn.close()
        if isinstance(held, _DeadlineSocket):
            held.sock.close()


def body(resp: http.client.HTTPResponse, max_body: int) -> bytes:
    """The response's body, TooLarge past ``max_body`` bytes (declared or read)."""
    declared = resp.getheader("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_body:
        raise TooLarge(int(declared))
    chunks: list[bytes] = []
    size = 0
    while True:
        piece = resp.read(min(1 << 16, max_body + 1 - size))
        if not piece:
            return b"".join(chunks)
        chunks.append(piece)
        size += len(piece)
        if size > max_body:
            raise TooLarge(None)


def request(method: str, url: str, headers: dict[str, str], timeout: float, max_body: int,
            data: bytes | None = None, proxies: bool = True) -> tuple[int, bytes]:
    """(status, body) of one request to an http:// or https:// ``url``, within ``timeout``
    seconds in all; OSError (TimeoutError past the deadline), http.client.HTTPException,
    ValueError (not such a URL) or TooLarge when it cannot be had."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError("not an http:// or https:// URL")
    deadline = time.monotonic() + timeout
    conn = None
    try:
        conn = connection(parts, deadline, proxies)
        conn.request(method, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body=data,
                     headers=headers)
        resp = conn.getresponse()
        return resp.status, body(resp, max_body)
    finally:
        close(conn)
