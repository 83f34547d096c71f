"""``storage.aws_keys``' sources over the network, each against a loopback server that
answers as the real service does: an EC2 instance's metadata service (IMDSv2: a session
token first), STS for a web identity token and for a role a profile names, the SSO portal
for an IAM Identity Center role; the chain's
order (pyarrow's: the environment, the profile, a web identity, then the container or the
instance); each answer bounded, each failure None (pyarrow's client lists)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kdump.storage import aws_keys
from kdump.storage.aws_keys import keys

_STS_ANSWER = """<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <{action}Result>
    <Credentials>
      <AccessKeyId>{access}</AccessKeyId>
      <SecretAccessKey>secret-of-{access}</SecretAccessKey>
      <SessionToken>token-of-{access}</SessionToken>
      <Expiration>2099-01-01T00:00:00Z</Expiration>
    </Credentials>
  </{action}Result>
</{action}Response>"""


class _Fake:
    """IMDSv2 and STS on one loopback port; ``seen``: (method, path, headers, form) of each request."""

    def __init__(self) -> None:
        self.seen: list = []
        self.role_answer: bytes | None = None      # instead of the role's keys
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                fake.seen.append(("PUT", self.path, {k.lower(): v for k, v in self.headers.items()}, None))
                if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    self._send(200, b"session-token")
                else:
                    self._send(400, b"")

            def do_GET(self) -> None:
                fake.seen.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None))
                if self.path.startswith("/federation/credentials?"):
                    query = dict(urllib.parse.parse_qsl(self.path.partition("?")[2]))
                    if self.headers.get("x-amz-sso_bearer_token") == "sso-access-token" and query == {
                            "account_id": "123456789012", "role_name": "reader"}:
                        self._send(200, json.dumps({"roleCredentials": {
                            "accessKeyId": "AKSSO", "secretAccessKey": "SSSO", "sessionToken": "TSSO",
                            "expiration": 4070908800000}}).encode())
                    else:
                        self._send(401, b"{}")
                elif self.headers.get("X-aws-ec2-metadata-token") != "session-token":
                    self._send(401, b"")
                elif self.path == "/latest/meta-data/iam/security-credentials/":
                    self._send(200, b"instance-role\n")
                elif self.path == "/latest/meta-data/iam/security-credentials/instance-role":
                    self._send(200, fake.role_answer or json.dumps(
                        {"Code": "Success", "AccessKeyId": "AKIMDS", "SecretAccessKey": "SIMDS", "Token": "TIMDS",
                         "Expiration": "2099-01-01T00:00:00Z"}).encode())
                else:
                    self._send(404, b"")

            def do_POST(self) -> None:
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                fake.seen.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, form))
                action = form.get("Action", "")
                if action == "AssumeRoleWithWebIdentity" and form.get("WebIdentityToken") == "jwt-of-the-pod":
                    self._send(200, _STS_ANSWER.format(action=action, access="AKWEB").encode())
                elif action == "AssumeRole" and "Credential=AKBASE/" in self.headers.get("Authorization", ""):
                    self._send(200, _STS_ANSWER.format(action=action, access="AKROLE").encode())
                else:
                    self._send(403, b"<ErrorResponse/>")

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake(clean, monkeypatch):
    f = _Fake()
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", f.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSO", f.url)
    monkeypatch.setenv("HOME", str(clean))
    yield f
    f.server.shutdown()


def test_an_instance_role_through_imdsv2(fake, monkeypatch):
    assert keys() is None and fake.seen == []          # AWS_EC2_METADATA_DISABLED=true: not asked
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    got = keys()
    assert got is not None and got[:3] == ("AKIMDS", "SIMDS", "TIMDS") and got.expires is not None
    assert [(m, p) for m, p, _, _ in fake.seen] == [
        ("PUT", "/latest/api/token"), ("GET", "/latest/meta-data/iam/security-credentials/"),
        ("GET", "/latest/meta-data/iam/security-credentials/instance-role")]
    assert keys() == got and len(fake.seen) == 3       # kept for the run, not asked at every listing


def test_an_instance_answer_past_its_byte_limit_gives_no_keys(fake, monkeypatch):
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    fake.role_answer = b" " * (aws_keys.ANSWER_BYTES + 1)
    assert keys() is None
    assert keys() is None and len(fake.seen) == 3      # a source that gave nothing is not asked again


def test_a_web_identity_token_through_sts(fake, monkeypatch):
    fake_token = fake_dir(monkeypatch) / "token"
    fake_token.write_text("jwt-of-the-pod\n")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(fake_token))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod")
    monkeypatch.setenv("AWS_ROLE_SESSION_NAME", "the-pod")
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")     # (the instance comes after: not asked)
    got = keys()
    assert got is not None and got[:3] == ("AKWEB", "secret-of-AKWEB", "token-of-AKWEB")
    [(method, path, headers, form)] = fake.seen
    assert (method, form["Action"], form["RoleArn"], form["RoleSessionName"]) == (
        "POST", "AssumeRoleWithWebIdentity", "arn:aws:iam::123456789012:role/pod", "the-pod")
    assert "authorization" not in headers               # the token is the proof: unsigned


def test_the_chains_order(fake, monkeypatch):
    """The profile's keys come before a web identity, the environment's before both."""
    (fake_dir(monkeypatch) / "token").write_text("jwt-of-the-pod\n")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(fake_dir(monkeypatch) / "token"))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod")
    profile = "[default]\naws_access_key_id = AKP\naws_secret_access_key = SP\n"
    (fake_dir(monkeypatch) / "credentials").write_text(profile)
    assert keys()[:2] == ("AKP", "SP")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SE")
    assert keys()[:2] == ("AKE", "SE")
    assert fake.seen == []
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    (fake_dir(monkeypatch) / "credentials").write_text("")
    assert keys()[0] == "AKWEB"


def test_a_role_a_profile_names_assumed_with_its_source_profiles_keys(fake, monkeypatch):
    home = fake_dir(monkeypatch)
    (home / "credentials").write_text("[base]\naws_access_key_id = AKBASE\naws_secret_access_key = SBASE\n")
    (home / "config").write_text("[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\n"
                                 "source_profile = base\nexternal_id = ext-1\n\n"
                                 "[profile mfa]\nrole_arn = arn:aws:iam::123456789012:role/dev\n"
                                 "source_profile = base\nmfa_serial = arn:aws:iam::123456789012:mfa/me\n\n"
                                 "[profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n\n"
                                 "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n"
                                 "sso_region = eu-west-1\n")
    monkeypatch.setenv("AWS_PROFILE", "dev")
    got = keys("eu-west-1")
    assert got is not None and got[:3] == ("AKROLE", "secret-of-AKROLE", "token-of-AKROLE")
    [(method, _, headers, form)] = fake.seen
    assert (form["Action"], form["RoleArn"], form["ExternalId"]) == (
        "AssumeRole", "arn:aws:iam::123456789012:role/dev", "ext-1")
    assert "/eu-west-1/sts/aws4_request" in headers["authorization"]
    for unusable in ("mfa", "sso"):      # a code to ask for; no SSO login cached: left to pyarrow
        monkeypatch.setenv("AWS_PROFILE", unusable)
        assert keys() is None
    assert len(fake.seen) == 1


def fake_dir(monkeypatch):
    import os
    from pathlib import Path

    return Path(os.environ["AWS_CONFIG_FILE"]).parent


def test_a_role_of_iam_identity_center_with_the_token_its_login_cached(fake, monkeypatch):
    import hashlib

    home = fake_dir(monkeypatch)
    (home / "config").write_text("[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\n"
                                 "sso_role_name = reader\n\n[sso-session corp]\n"
                                 "sso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n\n"
                                 "[profile old]\nsso_start_url = https://old.awsapps.com/start\n"
                                 "sso_region = eu-west-1\nsso_account_id = 123456789012\nsso_role_name = reader\n")
    cache = home / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True)
    logins = (("corp", "2099-01-01T00:00:00Z"), ("https://old.awsapps.com/start", "2000-01-01T00:00:00UTC"))
    for name, expires in logins:
        (cache / (hashlib.sha1(name.encode()).hexdigest() + ".json")).write_text(
            json.dumps({"accessToken": "sso-access-token", "expiresAt": expires}))
    monkeypatch.setenv("AWS_PROFILE", "sso")
    got = keys()
    assert got is not None and got[:3] == ("AKSSO", "SSSO", "TSSO") and got.expires == 4070908800
    monkeypatch.setenv("AWS_PROFILE", "old")       # its login has expired: not refreshed here
    assert keys() is None
    assert len(fake.seen) == 1


def test_a_web_identity_a_profile_names(fake, monkeypatch):
    home = fake_dir(monkeypatch)
    (home / "token").write_text("jwt-of-the-pod")
    (home / "config").write_text(f"[default]\nrole_arn = arn:aws:iam::123456789012:role/pod\n"
                                 f"web_identity_token_file = {home / 'token'}\nrole_session_name = from-profile\n")
    got = keys()
    assert got is not None and got.access_key == "AKWEB"
    assert fake.seen[0][3]["RoleSessionName"] == "from-profile"
