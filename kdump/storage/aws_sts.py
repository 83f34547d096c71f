"""Keys from AWS STS, for kdump's own S3 listing (``storage.aws_keys``): a role assumed with a
web identity token (``AssumeRoleWithWebIdentity``, unsigned: the token is the proof) or with
other keys (``AssumeRole``, signed with them). Each call is one bounded request
(``storage.bounded_http``: a total deadline, a byte limit); any failure gives None, and
pyarrow's client then lists (and says why).

The endpoint is the region's (``https://sts.REGION.amazonaws.com``) unless
``AWS_ENDPOINT_URL_STS``, ``AWS_ENDPOINT_URL`` or the profile's configuration names another
(``remote_settings.aws_endpoint``)."""

from __future__ import annotations

import calendar
import http.client
import time
import urllib.parse
import xml.etree.ElementTree as ET

from kdump.storage import bounded_http
from kdump.storage.aws_sign import Keys, signed
from kdump.storage.remote_settings import aws_endpoint, timeout

ANSWER_BYTES = 1 << 16          # an STS answer is a few KB
VERSION = "2011-06-15"


def endpoint(region: str) -> str:
    named = aws_endpoint("sts")
    if named:
        return named if "://" in named else "https://" + named
    return f"https://sts.{region}.amazonaws.com" + (".cn" if region.startswith("cn-") else "")


def session_name(given: str | None) -> str:
    return given or f"kdump-{int(time.time())}"


def with_web_identity(region: str, role_arn: str, token: str, session: str | None) -> Keys | None:
    return _call(region, {"Action": "AssumeRoleWithWebIdentity", "RoleArn": role_arn,
                          "RoleSessionName": session_name(session), "WebIdentityToken": token}, None)


def assume_role(region: str, role_arn: str, source: Keys, session: str | None, external_id: str | None = None,
                duration: str | None = None) -> Keys | None:
    params = {"Action": "AssumeRole", "RoleArn": role_arn, "RoleSessionName": session_name(session)}
    if external_id:
        params["ExternalId"] = external_id
    if duration and duration.isdigit():
        params["DurationSeconds"] = duration
    return _call(region, params, source)


def _call(region: str, params: dict[str, str], creds: Keys | None) -> Keys | None:
    url = endpoint(region)
    parts = urllib.parse.urlsplit(url)
    body = urllib.parse.urlencode({**params, "Version": VERSION}).encode()
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}
    if creds is not None:
        headers = signed(creds, region, "sts", "POST", parts.netloc, parts.path or "/", "", body, headers)
    try:
        status, answer = bounded_http.request("POST", url, headers, timeout(), ANSWER_BYTES, body)
    except (OSError, http.client.HTTPException, ValueError, bounded_http.TooLarge):
        return None
    return parse(answer) if status == 200 else None


def parse(body: bytes) -> Keys | None:
    """The keys of an AssumeRole... answer (its ``Credentials``), or None."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return None
    found: dict[str, str] = {}
    for element in root.iter():
        if element.tag.rpartition("}")[2] == "Credentials":
            found = {child.tag.rpartition("}")[2]: (child.text or "").strip() for child in element}
            break
    access, secret, token = found.get("AccessKeyId"), found.get("SecretAccessKey"), found.get("SessionToken")
    if not (access and secret):
        return None
    return Keys(access, secret, token or None, expiry(found.get("Expiration")))


def expiry(stamp: str | None) -> float | None:
    """An ISO 8601 UTC time ("2026-12-03T08:00:00Z", fractions allowed) as time.time()."""
    if not stamp:
        return None
    try:
        return float(calendar.timegm(time.strptime(stamp.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None
