"""``storage.aws_keys``: the keys kdump's own S3 listing signs with come from the environment,
then the profile of the shared credentials file, then of the config file (its keys, else its
``credential_process``), then a container's credentials endpoint; without any, None (pyarrow
lists)."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from kdump.storage.aws_keys import Keys, keys


def test_keys_from_the_environment_then_the_credentials_file(clean, monkeypatch):
    (clean / "credentials").write_text(
        "[default]\naws_access_key_id = AK1\naws_secret_access_key = S%1\n\n"
        "[other]\naws_access_key_id = AK2\naws_secret_access_key = S2\naws_session_token = T2\n")
    assert keys() == Keys("AK1", "S%1", None)
    monkeypatch.setenv("AWS_PROFILE", "other")
    assert keys() == Keys("AK2", "S2", "T2")
    monkeypatch.setenv("AWS_PROFILE", "missing")
    assert keys() is None
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK3")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3")
    assert keys() == Keys("AK3", "S3", None)


def test_keys_from_the_config_file_and_its_credential_process(clean, monkeypatch):
    answer = json.dumps({"Version": 1, "AccessKeyId": "AKP", "SecretAccessKey": "SP", "SessionToken": "TP"})
    (clean / "process.py").write_text(f"print({answer!r})\n")
    (clean / "config").write_text(f"[profile static]\naws_access_key_id = AKC\naws_secret_access_key = SC\n\n"
                                  f"[profile proc]\ncredential_process = {sys.executable} {clean / 'process.py'}\n\n"
                                  f"[profile failing]\ncredential_process = {sys.executable} -c 'exit(1)'\n")
    monkeypatch.setenv("AWS_PROFILE", "static")
    assert keys() == Keys("AKC", "SC", None)
    monkeypatch.setenv("AWS_PROFILE", "proc")
    assert keys() == Keys("AKP", "SP", "TP")
    monkeypatch.setenv("AWS_PROFILE", "failing")
    assert keys() is None


def test_keys_from_a_containers_credentials_endpoint(clean, monkeypatch):
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            body = json.dumps({"AccessKeyId": "AKE", "SecretAccessKey": "SE", "Token": "TE"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (clean / "token").write_text("secret-token\n")
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"http://127.0.0.1:{server.server_port}/role")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(clean / "token"))
        assert keys() == Keys("AKE", "SE", "TE")
        assert seen == [("/role", "secret-token")]
    finally:
        server.shutdown()
