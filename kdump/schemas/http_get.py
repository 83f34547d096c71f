"""One GET of a Schema Registry's JSON, bounded every way a hostile server could stretch it:
a total deadline (headers and body together, however slowly they trickle), a byte limit on
the body (read in pieces, never whole), redirects only to the same scheme and host, and
every failure one ``RegistryError`` line, whatever the server sends.

http.client rather than urllib: urllib's timeout bounds each socket read, not the request,
and its redirects go anywhere. Proxies are honoured as urllib honours them (``http_proxy``,
``https_proxy``, ``no_proxy``).
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import time
import urllib.parse
import urllib.request
from typing import Any

from kdump.errors import KdumpError

TIMEOUT = 30.0                  # seconds for one request, from connect to the body's last byte
MAX_BODY = 16 << 20             # bytes of one answer
MAX_REDIRECTS = 5
ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


class RegistryError(KdumpError):
    """The registry could not be read (exit 3)."""


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
        pass            # http.client closes the connection before the body is read: get_json closes the socket


def _connection(parts: urllib.parse.SplitResult, deadline: float) -> http.client.HTTPConnection:
    host, port = parts.hostname or "", parts.port
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    proxy = urllib.request.getproxies().get(parts.scheme)
    timeout = max(0.001, deadline - time.monotonic())
    if proxy and not urllib.request.proxy_bypass(host):
        p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        conn = cls(p.hostname or "", p.port, timeout=timeout)
        conn.set_tunnel(host, port)
    else:
        conn = cls(host, port, timeout=timeout)
    conn.connect()
    conn.sock = _DeadlineSocket(conn.sock, deadline)     # type: ignore[assignment]
    return conn


def get_json(url: str, timeout: float | None = None, max_body: int | None = None) -> Any:
    """The JSON at ``url``; None for a 404; RegistryError for anything else that is not 200."""
    timeout = TIMEOUT if timeout is None else timeout
    max_body = MAX_BODY if max_body is None else max_body
    deadline = time.monotonic() + timeout
    first = urllib.parse.urlsplit(url)
    for _ in range(MAX_REDIRECTS + 1):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise RegistryError(f"{url[:300]}: not an http:// or https:// URL")
        conn = None
        try:
            conn = _connection(parts, deadline)
            held: Any = conn.sock
            target = parts.path or "/"
            conn.request("GET", target + (f"?{parts.query}" if parts.query else ""), headers={"Accept": ACCEPT})
            resp = conn.getresponse()
            if resp.status in (301, 302, 303, 307, 308):
                to = urllib.parse.urljoin(url, resp.getheader("Location") or "")
                dest = urllib.parse.urlsplit(to)
                if (dest.scheme, dest.netloc) != (first.scheme, first.netloc):
                    raise RegistryError(f"{url[:300]}: HTTP {resp.status} to {to[:300]}: kdump follows redirects "
                                        "only to the same scheme and host")
                url = to
                continue
            if resp.status == 404:
                return None
            if resp.status != 200:
                raise RegistryError(f"{url[:300]}: HTTP {resp.status} {str(resp.reason)[:100]}")
            body = _body(resp, max_body, url)
        except RegistryError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            why = "no answer within the deadline" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
            raise RegistryError(f"{url[:300]}: cannot read the registry: {str(why)[:200]} "
                                f"(each request may take {timeout:g} s)") from None
        finally:
            if conn is not None:
                conn.close()
                held.sock.close()
        try:
            return json.loads(body)
        except RecursionError:
            raise RegistryError(f"{url[:300]}: the answer's JSON nests too deeply") from None
        except ValueError as e:
            raise RegistryError(f"{url[:300]}: the answer is not JSON: {str(e)[:200]}") from None
    raise RegistryError(f"{url[:300]}: more than {MAX_REDIRECTS} redirects")


def _body(resp: http.client.HTTPResponse, max_body: int, url: str) -> bytes:
    declared = resp.getheader("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_body:
        raise RegistryError(f"{url[:300]}: an answer of {int(declared)} bytes, more than the {max_body} kdump reads")
    chunks, size = [], 0
    while True:
        piece = resp.read(min(1 << 16, max_body + 1 - size))
        if not piece:
            return b"".join(chunks)
        chunks.append(piece)
        size += len(piece)
        if size > max_body:
            raise RegistryError(f"{url[:300]}: an answer of more than the {max_body} bytes kdump reads")
