"""One GET of a Schema Registry's JSON, bounded every way a hostile server could stretch it:
a total deadline and a byte limit (``storage.bounded_http``), redirects only to the same
scheme and host, and every failure one ``RegistryError`` line, whatever the server sends.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from typing import Any

from kdump.errors import KdumpError
from kdump.storage import bounded_http

TIMEOUT = 30.0                  # seconds for one request, from connect to the body's last byte
MAX_BODY = 16 << 20             # bytes of one answer
MAX_REDIRECTS = 5
ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


class RegistryError(KdumpError):
    """The registry could not be read (exit 3)."""


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
            conn = bounded_http.connection(parts, deadline)
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
            try:
                body = bounded_http.body(resp, max_body)
            except bounded_http.TooLarge as e:
                raise RegistryError(f"{url[:300]}: an answer of more than the {max_body} bytes kdump reads"
                                    if e.declared is None else
                                    f"{url[:300]}: an answer of {e.declared} bytes, more than the {max_body} kdump "
                                    "reads") from None
        except RegistryError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            why = "no answer within the deadline" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
            raise RegistryError(f"{url[:300]}: cannot read the registry: {str(why)[:200]} "
                                f"(each request may take {timeout:g} s)") from None
        finally:
            bounded_http.close(conn)
        try:
            return json.loads(body)
        except RecursionError:
            raise RegistryError(f"{url[:300]}: the answer's JSON nests too deeply") from None
        except ValueError as e:
            raise RegistryError(f"{url[:300]}: the answer is not JSON: {str(e)[:200]}") from None
    raise RegistryError(f"{url[:300]}: more than {MAX_REDIRECTS} redirects")
