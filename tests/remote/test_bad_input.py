"""Remote bad input: one located line, exit status 3 (2 for usage), no traceback, bounded in
time (every run here has a subprocess time limit), and never reported as damage."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from servers import LOG_DIRS, free_port

from support.run import run_kdump

pytestmark = pytest.mark.slow


def _kdump(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "kdump", *args], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _one_error(done: subprocess.CompletedProcess, code: int, text: str) -> None:
    errors = [line for line in done.stderr.splitlines() if line.startswith("kdump: error:")]
    assert done.returncode == code, done.stderr
    assert len(errors) == 1 and text in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_missing_bucket_and_path(s3, s3_dirs):
    _one_error(_kdump(s3.env(), "verify", "s3://no-such-bucket/logs"), 3,
               "s3://no-such-bucket/logs: no such bucket: no-such-bucket")
    _one_error(_kdump(s3.env(), "dump", s3_dirs["generated"] + "/no-such-partition-0"), 3,
               "/no-such-partition-0: cannot read: no such file or directory")


def test_refused_connection(s3, s3_dirs):
    port = free_port()      # nothing listens there
    _one_error(_kdump(s3.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}"), "verify", s3_dirs["generated"]), 3,
               f"cannot connect to S3 endpoint http://127.0.0.1:{port}")


def test_endpoint_that_never_answers(s3, s3_dirs):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)       # connections are accepted by the kernel, never answered
        port = server.getsockname()[1]
        done = _kdump(s3.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", KDUMP_REMOTE_TIMEOUT="2"),
                      "info", s3_dirs["generated"], timeout=60)
    _one_error(done, 3, f"S3 endpoint http://127.0.0.1:{port} did not answer within 2 s (KDUMP_REMOTE_TIMEOUT)")


def _only_line(done: subprocess.CompletedProcess, text: str) -> None:
    """Exit 3, nothing on stdout, and one line on stderr: the run stopped at the first call
    the store refused (not one unreadable file after another, never damage)."""
    assert done.returncode == 3, done.stderr
    assert done.stdout == "", done.stdout
    assert len(done.stderr.splitlines()) == 1 and text in done.stderr, done.stderr


NO_KEYS = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
           "AWS_CONFIG_FILE": "/nonexistent"}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_no_credentials_stop_the_run(s3, s3_dirs, jobs):
    """No keys anywhere: the requests go unsigned, the store lists but refuses to read."""
    where = f"access denied by S3 endpoint {s3.endpoint} (wrong or missing credentials, or no right to read it)"
    for command in (("verify", "--json"), ("dump", "--json"), ("info",), ("export", "--out", "/nonexistent/x")):
        done = _kdump(s3.env(**NO_KEYS), *command, "-j", jobs, s3_dirs["generated"])
        _only_line(done, where)
        assert done.stderr.startswith(f"kdump: error: {s3_dirs['generated']}/"), done.stderr


def test_wrong_keys_stop_the_run(s3_checking_keys):
    server = s3_checking_keys
    for keys in (("AKIAWRONGKEYID000000", "wrong"), (server.keys[0], "wrong secret")):
        env = server.env(AWS_ACCESS_KEY_ID=keys[0], AWS_SECRET_ACCESS_KEY=keys[1])
        _only_line(_kdump(env, "verify", "--json", server.url),
                   f"kdump: error: {server.url}: access denied by S3 endpoint {server.endpoint}")


def test_keys_without_the_right_to_read(s3_checking_keys):
    """Allowed to list the bucket, not to read its objects (a HEAD request is a read): one line."""
    server = s3_checking_keys
    env = server.env(AWS_ACCESS_KEY_ID=server.list_only[0], AWS_SECRET_ACCESS_KEY=server.list_only[1])
    for command in (("verify", "--json"), ("dump", "--json", "-j", "2")):
        done = _kdump(env, *command, server.url + "/headers-0")
        _only_line(done, f"kdump: error: {server.url}/headers-0: access denied by S3 endpoint {server.endpoint}")
    # the same keys as the owner's, the same bytes: it is the rights that were missing
    assert _kdump(server.env(), "verify", "--json", server.url + "/headers-0").returncode == 0


@pytest.mark.parametrize("change", ["deleted", "truncated"])
def test_object_changed_while_read(s3, change, monkeypatch):
    """The segment is listed, then deleted or cut short before it is read: the file is
    unreadable (exit 3), not damaged."""
    from kdump.storage import fs


    url = s3.upload("kdump-logs", LOG_DIRS["generated"] / "headers-0", f"changing-{change}/headers-0")
    key = url.partition("kdump-logs/")[2] + "/00000000000000000000.log"
    client = s3.client()
    listed = fs.scan_pages

    def list_then_change(directory):
        pages = list(listed(directory))
        if change == "deleted":
            client.delete_object(Bucket="kdump-logs", Key=key)
        else:
            client.put_object(Bucket="kdump-logs", Key=key, Body=b"\0" * 100)
        yield from pages

    monkeypatch.setattr(fs, "scan_pages", list_then_change)
    r = run_kdump("verify", "--json", "-j", "1", url)
    assert r.code == 3, r.err
    log = json.loads(r.out.splitlines()[0])
    assert log["status"] == "unreadable", log
    assert "Traceback" not in r.err and "damaged" not in r.out
    assert r.err == "kdump: verified 3 files (0 segments, 0 bytes): 2 ok, 0 damaged, 0 torn tail, 1 unreadable\n", r.err
    assert [f["message"] for f in log["findings"]] == [
        "cannot read: no such file or directory" if change == "deleted" else
        "the object ends at byte 100, before its listed size 2859 (cut or replaced while kdump read it)"], log


def test_a_listing_of_thousands_of_keys(s3, s3_dirs, tmp_path):
    """2,500 empty keys that are no Kafka files, under a name like a partition's: listed in
    three pages of 1,000 (two requests go on from where a page ended), no request for any one
    key (no HEAD or GET per key: the listing's sizes are used), the prefix looked at once,
    then the one usage line a
    local dir of the same names gives (the bench lists 100,000: bench/README.md)."""
    client = s3.client()
    names = [f"object-{i:05d}.txt" for i in range(2500)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: client.put_object(Bucket="kdump-logs", Key=f"many-0/{name}", Body=b""), names))
    local = tmp_path / "many-0"
    local.mkdir()
    for name in names:
        (local / name).touch()
    for command in ("verify", "dump", "info"):
        logged = len(s3.log.read_text().splitlines())
        done = _kdump(s3.env(), command, "s3://kdump-logs/many-0")
        requests = s3.log.read_text().splitlines()[logged:]
        expected = _kdump({}, command, str(local))
        assert expected.returncode == 2 and "Traceback" not in expected.stderr, expected.stderr
        assert (done.returncode, done.stdout, done.stderr) == (
            2, expected.stdout, expected.stderr.replace(str(local), "s3://kdump-logs/many-0")), done.stderr
        pages = [line for line in requests if "prefix=many-0/" in line and "max-keys=1000" in line]
        assert len(pages) == 3 and sum("continuation-token=" in line for line in pages) == 2, (command, pages)
        assert not [line for line in requests if "/many-0/object-" in line], (command, requests)
        # besides the pages, one look at the prefix itself (pyarrow: a HEAD, a listing of one key), not one per question
        assert len(requests) - len(pages) <= 2, (command, requests)
    # a prefix larger than KDUMP_REMOTE_LIST_KEYS: one line, exit 3; the default holds far more
    done = _kdump(s3.env(KDUMP_REMOTE_LIST_KEYS="2000"), "verify", "s3://kdump-logs/many-0")
    _only_line(done, f"kdump: error: s3://kdump-logs/many-0: the listing of s3://kdump-logs/many-0 from S3 endpoint "
                     f"{s3.endpoint} listed 2,500 keys, more than 2,000 (KDUMP_REMOTE_LIST_KEYS raises the limit")


def test_writing_options_refuse_remote_paths(s3, s3_dirs):
    url = s3_dirs["generated"] + "/torn-tail-0"
    for option, args in (("--truncate", ("verify", "--truncate")), ("--rebuild", ("index", "--rebuild")),
                         ("--apply", ("recover", "--apply", "--yes")),
                         ("--salvage", ("recover", "--salvage", "/tmp/kdump-never-written"))):
        r = run_kdump(*args, url)
        assert r.code == 2, (args, r.err)
        assert r.err.startswith(f"kdump: error: {url}: {option} writes beside the files it repairs"), r.err
        assert len(r.err.splitlines()) == 1


def test_hdfs_missing_path_and_refused_namenode(hdfs):
    _one_error(_kdump({}, "verify", f"{hdfs.url}/no-such-dir"), 3,
               f"{hdfs.url}/no-such-dir: cannot read: no such file or directory")
    port = free_port()
    _one_error(_kdump({"KDUMP_REMOTE_TIMEOUT": "5"}, "verify", f"hdfs://127.0.0.1:{port}/logs", timeout=60), 3,
               f"hdfs://127.0.0.1:{port}/logs: ")


class _EndlessListing:
    """An S3 endpoint on 127.0.0.1 whose ListObjectsV2 pages never end: each has 1,000 keys
    (``empty``: none), IsTruncated and a new continuation token; any other request is a 404."""

    def __init__(self, empty: bool = False) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlparse

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, body: bytes = b"") -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
                self._send(404)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                q = parse_qs(urlparse(self.path).query)
                if "list-type" not in q:
                    return self._send(404, b"<Error><Code>NoSuchKey</Code></Error>")
                prefix, keys = q.get("prefix", [""])[0], int(q.get("max-keys", ["1000"])[0])
                n = int(q.get("continuation-token", ["0"])[0])
                if empty and n:         # (the first page has keys: a prefix is there)
                    keys = 0
                items = "".join(f"<Contents><Key>{prefix}{n + i:012d}.bin</Key><Size>1</Size></Contents>"
                                for i in range(keys))
                self._send(200, (f"<ListBucketResult><Name>b</Name><Prefix>{prefix}</Prefix><KeyCount>{keys}"
                                 f"</KeyCount><MaxKeys>{keys}</MaxKeys><IsTruncated>true</IsTruncated>"
                                 f"<NextContinuationToken>{n + keys}</NextContinuationToken>{items}"
                                 f"</ListBucketResult>").encode())

        import threading

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("command", ["verify", "dump", "info", "groups"])
def test_a_listing_that_pages_forever_stops_the_run(command):
    # Before: past 150 s at up to 2.7 GB with no output (3.4 GB after 13 minutes here).
    server = _EndlessListing()
    try:
        env = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
               "AWS_DEFAULT_REGION": "us-east-1", "KDUMP_REMOTE_LIST_TIMEOUT": "2"}
        done = _kdump(env, command, "s3://b/logs-0", timeout=60)
    finally:
        server.close()
    _only_line(done, f"kdump: error: s3://b/logs-0: the listing of s3://b/logs-0 from S3 endpoint {server.endpoint} "
                     f"did not end within 2 s (KDUMP_REMOTE_LIST_TIMEOUT), after ")
    assert done.stderr.endswith(" keys: its pages go on without end?\n"), done.stderr


def test_a_listing_of_empty_pages_without_end_stops_the_run():
    server = _EndlessListing(empty=True)
    try:
        env = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
               "AWS_DEFAULT_REGION": "us-east-1"}
        done = _kdump(env, "verify", "s3://b/logs-0", timeout=60)
    finally:
        server.close()
    _only_line(done, f"kdump: error: s3://b/logs-0: the listing of s3://b/logs-0 from S3 endpoint {server.endpoint} "
                     f"answered 100 pages in a row with no key, each saying more follow, after 1,000 keys: its pages "
                     f"go on without end?")


@pytest.mark.parametrize("command", ["verify", "dump", "info", "groups"])
def test_a_listing_stops_at_its_key_limit(command):
    """The pages are asked for one at a time: the run stops at the first past KDUMP_REMOTE_LIST_KEYS,
    saying how many keys it had listed. Before, the listing went on for its whole time limit
    (600 s by default, growing to 1 GB) before anything was said."""
    server = _EndlessListing()
    try:
        env = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
               "AWS_DEFAULT_REGION": "us-east-1", "KDUMP_REMOTE_LIST_KEYS": "4500"}
        done = _kdump(env, command, "s3://b/logs-0", timeout=60)
    finally:
        server.close()
    _only_line(done, f"kdump: error: s3://b/logs-0: the listing of s3://b/logs-0 from S3 endpoint {server.endpoint} "
                     f"listed 5,000 keys, more than 4,500 (KDUMP_REMOTE_LIST_KEYS raises the limit for a prefix "
                     f"this large): its pages go on without end?")
