"""The AWS keys kdump signs its own S3 listing requests with (``storage.s3_listing``), from
the sources of the AWS SDK's chain it can read honestly, in the SDK's order:

1. the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``);
2. the profile (``AWS_PROFILE``, else ``default``) of the shared credentials file, then of the
   config file: its keys and session token, else its ``credential_process`` (a command whose
   standard output is the keys as JSON, run with the request time limit);
3. a container's credentials endpoint (ECS task roles, EKS Pod Identity:
   ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` or ``..._FULL_URI``, with its authorization token).

Not read here, so left to pyarrow (whose listing is one call, bounded only by its time and
memory): web identity tokens (EKS IRSA), SSO, roles assumed from a profile (``role_arn``),
and an EC2 instance's metadata service.
"""

from __future__ import annotations

import configparser
import json
import os
import shlex
import subprocess
import urllib.request
from typing import NamedTuple

from kdump.storage.remote_settings import timeout

CONTAINER_HOST = "http://169.254.170.2"      # where ECS serves a task's role credentials
ANSWER_BYTES = 1 << 16                      # a credentials answer is a few hundred bytes


class Keys(NamedTuple):
    access_key: str
    secret_key: str
    token: str | None


def keys() -> Keys | None:
    """The first keys of the chain above, or None (pyarrow's client then lists)."""
    env = os.environ
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return Keys(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN") or None)
    profile = env.get("AWS_PROFILE", "default")
    files = ((env.get("AWS_SHARED_CREDENTIALS_FILE", os.path.expanduser("~/.aws/credentials")), profile),
             (env.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config")),
              profile if profile == "default" else f"profile {profile}"))
    for path, section in files:
        found = _profile_keys(path, section)
        if found is not None:
            return found
    return _container_keys()


def _profile_keys(path: str, section: str) -> Keys | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error:
        return None
    if not parser.has_section(section):
        return None
    access, secret = (parser.get(section, "aws_access_key_id", fallback=""),
                      parser.get(section, "aws_secret_access_key", fallback=""))
    if access and secret:
        return Keys(access, secret, parser.get(section, "aws_session_token", fallback="") or None)
    command = parser.get(section, "credential_process", fallback="")
    return _process_keys(command) if command else None


def _process_keys(command: str) -> Keys | None:
    """The keys a ``credential_process`` prints ({"Version": 1, "AccessKeyId": ...})."""
    try:
        r = subprocess.run(shlex.split(command), capture_output=True, timeout=timeout(), stdin=subprocess.DEVNULL)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return _answer(r.stdout[:ANSWER_BYTES], "SessionToken")


def _container_keys() -> Keys | None:
    env = os.environ
    if env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        url = CONTAINER_HOST + env["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
    elif env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        url = env["AWS_CONTAINER_CREDENTIALS_FULL_URI"]
    else:
        return None
    if not url.startswith(("http://", "https://")):
        return None
    token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN", "")
    try:
        if not token and env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"):
            with open(env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"]) as f:
                token = f.read(ANSWER_BYTES).strip()
        request = urllib.request.Request(url, headers={"Authorization": token} if token else {})
        with urllib.request.urlopen(request, timeout=min(5.0, timeout())) as r:   # noqa: S310 - http(s) only
            body = r.read(ANSWER_BYTES)
    except (OSError, ValueError):
        return None
    return _answer(body, "Token")


def _answer(body: bytes, token_field: str) -> Keys | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    access, secret, token = doc.get("AccessKeyId"), doc.get("SecretAccessKey"), doc.get(token_field)
    if not (isinstance(access, str) and access and isinstance(secret, str) and secret):
        return None
    return Keys(access, secret, token if isinstance(token, str) and token else None)
