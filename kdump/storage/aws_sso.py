"""Keys of an IAM Identity Center (SSO) role, for kdump's own S3 listing (``storage.aws_keys``):
the access token ``aws sso login`` left in ``~/.aws/sso/cache`` (a file named by the SHA-1 of
the profile's ``sso_session``, or of its ``sso_start_url`` for the older form) exchanged at the
SSO portal (``GetRoleCredentials``) for the account and role the profile names. One bounded
request (``storage.bounded_http``). A token that has expired is not refreshed here (that
needs the OIDC client the login registered): None, and pyarrow's client lists."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import time
import urllib.parse

from kdump.storage import bounded_http
from kdump.storage.aws_sign import Keys
from kdump.storage.aws_sts import expiry
from kdump.storage.remote_settings import aws_endpoint, timeout

ANSWER_BYTES = 1 << 16


def cached_token(name: str) -> str | None:
    """The unexpired access token cached for a session name or start URL, or None."""
    path = os.path.join(os.path.expanduser("~/.aws/sso/cache"), hashlib.sha1(name.encode()).hexdigest() + ".json")
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(ANSWER_BYTES + 1)[:ANSWER_BYTES])
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    token, expires = doc.get("accessToken"), doc.get("expiresAt")
    if not isinstance(token, str) or not token or not isinstance(expires, str):
        return None
    until = expiry(expires.replace("UTC", "Z"))
    return token if until is not None and until > time.time() else None


def role_keys(name: str, region: str, account: str, role: str) -> Keys | None:
    token = cached_token(name)
    if token is None:
        return None
    base = aws_endpoint("sso") or f"https://portal.sso.{region}.amazonaws.com"
    url = base.rstrip("/") + "/federation/credentials?" + urllib.parse.urlencode(
        {"account_id": account, "role_name": role})
    try:
        status, body = bounded_http.request("GET", url, {"x-amz-sso_bearer_token": token}, timeout(), ANSWER_BYTES)
        doc = json.loads(body) if status == 200 else None
    except (OSError, http.client.HTTPException, ValueError, RecursionError, bounded_http.TooLarge):
        return None
    found = doc.get("roleCredentials") if isinstance(doc, dict) else None
    if not isinstance(found, dict):
        return None
    access, secret, session, until = (found.get("accessKeyId"), found.get("secretAccessKey"),
                                      found.get("sessionToken"), found.get("expiration"))
    if not (isinstance(access, str) and access and isinstance(secret, str) and secret):
        return None
    return Keys(access, secret, session if isinstance(session, str) and session else None,
                until / 1000 if isinstance(until, int) else None)
