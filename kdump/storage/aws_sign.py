"""AWS keys and AWS Signature Version 4, for the requests kdump makes itself: its S3
listing (``storage.s3_listing``) and the STS calls that turn a role into keys
(``storage.aws_sts``)."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import NamedTuple

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class Keys(NamedTuple):
    access_key: str
    secret_key: str
    token: str | None
    expires: float | None = None        # time.time() past which they are no longer good (None: not said)


def signed(creds: Keys, region: str, service: str, method: str, host: str, path: str, query: str,
           payload: bytes = b"", headers: dict[str, str] | None = None) -> dict[str, str]:
    """``headers`` (lower-case names) and the request's own, signed: ``path`` and ``query``
    as sent (already escaped, the query's parameters sorted)."""
    now = time.gmtime()
    amz_date, day = time.strftime("%Y%m%dT%H%M%SZ", now), time.strftime("%Y%m%d", now)
    digest = EMPTY_SHA256 if not payload else hashlib.sha256(payload).hexdigest()
    headers = {**(headers or {}), "host": host, "x-amz-content-sha256": digest, "x-amz-date": amz_date}
    if creds.token:
        headers["x-amz-security-token"] = creds.token
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, path, query, "".join(f"{k}:{headers[k].strip()}\n" for k in sorted(headers)),
                           names, digest])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + creds.secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, "
                                f"SignedHeaders={names}, Signature={signature}")
    return headers
