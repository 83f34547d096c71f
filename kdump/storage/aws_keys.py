"""The AWS keys kdump signs its own S3 listing requests with (``storage.s3_listing``), found
as pyarrow's client (the AWS SDK for C++'s default chain) finds them, in its order:

1. the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``);
2. the profile (``AWS_PROFILE``, else ``default``) of the shared credentials file, then of the
   config file: a role it names (``role_arn``) assumed through STS with the keys of its
   ``source_profile`` or ``credential_source``, or with its ``web_identity_token_file``; else
   its keys and session token; else its ``credential_process`` (a command whose standard
   output is the keys as JSON, run with the request time limit);
3. a web identity token (``AWS_WEB_IDENTITY_TOKEN_FILE`` and ``AWS_ROLE_ARN``: EKS IRSA)
   exchanged for keys through STS;
4. the profile's IAM Identity Center (SSO) role, with the token ``aws sso login`` cached
   (``storage.aws_sso``);
5. a container's credentials endpoint (ECS task roles, EKS Pod Identity:
   ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` or ``..._FULL_URI``, with its authorization
   token); without one, an EC2 instance's role from its metadata service (IMDSv2, unless
   ``AWS_EC2_METADATA_DISABLED`` is true).

Every request is bounded (``storage.bounded_http``). Keys had over the network are kept for
the run, until five minutes before they expire. A source that is set but cannot be used here
(an MFA device to ask, an SSO token to refresh, an answer refused), or no source at all,
gives None: pyarrow's client then lists, with its own chain and errors.
"""

from __future__ import annotations

import configparser
import http.client
import json
import os
import shlex
import subprocess
import time
from typing import NamedTuple

from kdump.storage import aws_sso, aws_sts, bounded_http
from kdump.storage.aws_sign import Keys
from kdump.storage.remote_settings import timeout

CONTAINER_HOST = "http://169.254.170.2"      # where ECS serves a task's role credentials
METADATA_HOST = "http://169.254.169.254"     # an EC2 instance's metadata service (IPv6: below)
METADATA_HOST_IPV6 = "http://[fd00:ec2::254]"
METADATA_TIMEOUT = 1.0      # the SDKs' default (AWS_METADATA_SERVICE_TIMEOUT): off EC2 it goes unanswered
TOKEN_TTL = "21600"         # seconds an IMDSv2 session token is asked for
ANSWER_BYTES = 1 << 16      # a credentials answer (or a token file) is a few hundred bytes
ROLE_DEPTH = 5              # source_profile links followed
RENEW_BEFORE = 300.0        # seconds before keys expire that they are asked for again

__all__ = ["Keys", "keys"]

_kept: dict[tuple, Keys | None] = {}     # None: asked, and no keys came (not asked again this run)


class _Unusable(Exception):
    """A source is set that kdump cannot use: the chain stops there (pyarrow's client lists)."""


def keys(region: str = "us-east-1") -> Keys | None:
    """The first keys of the chain above, or None (pyarrow's client then lists). ``region``:
    where STS is asked."""
    try:
        return _chain(region)
    except _Unusable:
        return None


def _chain(region: str) -> Keys | None:
    env = os.environ
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return Keys(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN") or None)
    profiles = _Profiles()
    name = env.get("AWS_PROFILE", "default")
    found = profiles.keys(name, region)
    if found is not None:
        return found
    if env.get("AWS_WEB_IDENTITY_TOKEN_FILE") and env.get("AWS_ROLE_ARN"):
        return _web_identity(region, env["AWS_ROLE_ARN"], env["AWS_WEB_IDENTITY_TOKEN_FILE"],
                             env.get("AWS_ROLE_SESSION_NAME"))
    if profiles.get(name, "sso_start_url") or profiles.get(name, "sso_session"):
        return profiles.sso(name)
    if env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return _container_keys()
    if env.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return None
    return _instance_keys()


class _Profiles:
    """The profiles of the shared credentials file and of the config file."""

    def __init__(self) -> None:
        env = os.environ
        self.files = (_read(env.get("AWS_SHARED_CREDENTIALS_FILE", os.path.expanduser("~/.aws/credentials"))),
                      _read(env.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config"))))

    def sections(self, name: str) -> list[configparser.SectionProxy]:
        """The profile's section in each file that has it: credentials file first."""
        credentials, config = self.files
        out = [credentials[name]] if credentials.has_section(name) else []
        in_config = name if name == "default" else f"profile {name}"
        return out + ([config[in_config]] if config.has_section(in_config) else [])

    def get(self, name: str, option: str) -> str:
        return next((s.get(option, "") for s in self.sections(name) if s.get(option, "")), "")

    def keys(self, name: str, region: str, depth: int = 0) -> Keys | None:
        role = self.get(name, "role_arn")
        if role:
            return self._assumed(name, role, region, depth)
        for section in self.sections(name):
            access, secret = section.get("aws_access_key_id", ""), section.get("aws_secret_access_key", "")
            if access and secret:
                return Keys(access, secret, section.get("aws_session_token", "") or None)
            command = section.get("credential_process", "")
            if command:
                return _process_keys(command)
        return None

    def _assumed(self, name: str, role: str, region: str, depth: int) -> Keys | None:
        get = self.get
        if get(name, "mfa_serial") or depth >= ROLE_DEPTH:
            raise _Unusable     # a code to ask someone for; a chain of roles too long (or a loop)
        session = get(name, "role_session_name") or None
        if get(name, "web_identity_token_file"):
            return _web_identity(region, role, get(name, "web_identity_token_file"), session)
        source, named = get(name, "source_profile"), get(name, "credential_source")
        if source:
            # (a source profile's own keys, even when it names a role of its own: the SDKs' rule)
            base = self._static(source) if source == name else self.keys(source, region, depth + 1)
        elif named == "Environment":
            env = os.environ
            base = (Keys(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN") or None)
                    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY") else None)
        elif named == "Ec2InstanceMetadata":
            base = _instance_keys()
        elif named == "EcsContainer":
            base = _container_keys()
        else:
            raise _Unusable
        if base is None:
            raise _Unusable
        key = ("assume", role, base, session, region, aws_sts.endpoint(region), get(name, "external_id"))
        return _kept_or(key, lambda: aws_sts.assume_role(region, role, base, session, get(name, "external_id"),
                                                         get(name, "duration_seconds")))

    def sso(self, name: str) -> Keys:
        get, session = self.get, self.get(name, "sso_session")
        config = self.files[1]
        if session:
            section = f"sso-session {session}"
            start, region = config.get(section, "sso_start_url", fallback=""), config.get(section, "sso_region",
                                                                                           fallback="")
        else:
            start, region = get(name, "sso_start_url"), get(name, "sso_region")
        account, role = get(name, "sso_account_id"), get(name, "sso_role_name")
        if not (start and region and account and role):
            raise _Unusable
        cached = session or start
        return _kept_or(("sso", cached, region, account, role), lambda: aws_sso.role_keys(cached, region, account,
                                                                                            role))

    def _static(self, name: str) -> Keys | None:
        for section in self.sections(name):
            access, secret = section.get("aws_access_key_id", ""), section.get("aws_secret_access_key", "")
            if access and secret:
                return Keys(access, secret, section.get("aws_session_token", "") or None)
        return None


def _read(path: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except (configparser.Error, UnicodeDecodeError):
        return configparser.ConfigParser(interpolation=None)
    return parser


def _kept_or(key: tuple, fetch) -> Keys:
    """The keys kept for ``key`` while good, else ``fetch()``'s, kept; _Unusable if none
    came (then or before: a source that did not answer is not asked at every listing)."""
    if key in _kept:
        held = _kept[key]
        if held is None:
            raise _Unusable
        if held.expires is None or held.expires - RENEW_BEFORE > time.time():
            return held
    found = _kept[key] = fetch()
    if found is None:
        raise _Unusable
    return found


def _web_identity(region: str, role: str, token_file: str, session: str | None) -> Keys | None:
    try:
        with open(token_file, "rb") as f:
            token = f.read(ANSWER_BYTES + 1).decode().strip()
    except (OSError, UnicodeDecodeError):
        raise _Unusable from None
    if not token or len(token) > ANSWER_BYTES:
        raise _Unusable
    key = ("web", role, token, session, region, aws_sts.endpoint(region))
    return _kept_or(key, lambda: aws_sts.with_web_identity(region, role, token, session))


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
    token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN", "")
    try:
        if not token and env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"):
            with open(env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"]) as f:
                token = f.read(ANSWER_BYTES).strip()
    except (OSError, ValueError):
        return None
    got = _get(url, {"Authorization": token} if token else {}, min(5.0, timeout()))
    return None if got is None else _answer(got, "Token")


class _Metadata(NamedTuple):
    host: str
    timeout: float


def _metadata() -> _Metadata:
    env = os.environ
    host = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or (
        METADATA_HOST_IPV6 if env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "").lower() == "ipv6"
        else METADATA_HOST)
    try:
        wait = float(env.get("AWS_METADATA_SERVICE_TIMEOUT", METADATA_TIMEOUT))
    except ValueError:
        wait = METADATA_TIMEOUT
    return _Metadata(host.rstrip("/"), max(0.1, min(wait, timeout())))


def _instance_keys() -> Keys | None:
    """The role keys of an EC2 instance, through IMDSv2: a session token (PUT), the role's
    name, then its keys, each a bounded request of its own."""
    m = _metadata()

    def fetch() -> Keys | None:
        token = _get(m.host + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": TOKEN_TTL}, m.timeout,
                     "PUT")
        if not token:
            return None
        headers = {"X-aws-ec2-metadata-token": token.decode("ascii", "replace").strip()}
        names = _get(m.host + "/latest/meta-data/iam/security-credentials/", headers, m.timeout)
        role = names.decode("utf-8", "replace").strip().splitlines()[0].strip() if names and names.strip() else ""
        if not role or "/" in role:
            return None
        got = _get(m.host + "/latest/meta-data/iam/security-credentials/" + role, headers, m.timeout)
        return None if got is None else _answer(got, "Token")

    return _kept_or(("imds", m.host), fetch)


def _get(url: str, headers: dict[str, str], wait: float, method: str = "GET") -> bytes | None:
    """The body of a 200 answer from a link-local service (no proxy), or None."""
    try:
        status, body = bounded_http.request(method, url, headers, wait, ANSWER_BYTES, proxies=False)
    except (OSError, http.client.HTTPException, ValueError, bounded_http.TooLarge):
        return None
    return body if status == 200 else None


def _answer(body: bytes, token_field: str) -> Keys | None:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    access, secret, token = doc.get("AccessKeyId"), doc.get("SecretAccessKey"), doc.get(token_field)
    if not (isinstance(access, str) and access and isinstance(secret, str) and secret):
        return None
    expires = doc.get("Expiration")
    return Keys(access, secret, token if isinstance(token, str) and token else None,
                aws_sts.expiry(expires) if isinstance(expires, str) else None)
