"""--schema-registry against hostile servers (in-process, on 127.0.0.1, every loop bounded):
each bad answer or local setup is one error line, exit 3, never a traceback, a hang or a
body read whole."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kdump.schemas import http_get, registry
from kdump.schemas.http_get import RegistryError
from support.run import FIXTURES, run_kdump

PART = str(FIXTURES / "schemas" / "registry" / "scratch-json-0")
Answer = Callable[[BaseHTTPRequestHandler], None]


def send(h: BaseHTTPRequestHandler, body: bytes | str, status: int = 200, headers: dict | None = None) -> None:
    body = body.encode() if isinstance(body, str) else body
    h.send_response(status)
    for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def serve(routes: dict[str, Answer]) -> tuple[ThreadingHTTPServer, str, list[str]]:
    """A server answering each path from ``routes`` (by its start, longest first), 404 else."""
    asked: list[str] = []

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:          # noqa: N802
            asked.append(self.path)
            for start in sorted(routes, key=len, reverse=True):
                if self.path.startswith(start):
                    try:
                        routes[start](self)
                    except OSError:
                        pass                # the client hung up, as it should
                    return
            send(self, b'{"error_code":40401}', 404)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", asked


@pytest.fixture
def hostile():
    servers = []

    def start(routes):
        server, url, asked = serve(routes)
        servers.append(server)
        return url, asked

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def fails(url: str, message: str) -> None:
    with pytest.raises(RegistryError) as e:
        registry.records(url)
    assert message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_a_body_trickled_byte_by_byte_ends_at_the_deadline(hostile, monkeypatch):
    def trickle(h):
        h.send_response(200)
        h.send_header("Content-Length", "40")
        h.end_headers()
        for _ in range(40):                  # 8 s in all, each byte well within a per-read timeout
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.2)

    url, _ = hostile({"/config": trickle})
    monkeypatch.setattr(http_get, "TIMEOUT", 1.0)
    fails(url, "/config: cannot read the registry: no answer within the deadline (each request may take 1 s)")


def test_headers_trickled_byte_by_byte_end_at_the_deadline(hostile, monkeypatch):
    def trickle(h):
        for c in b"HTTP/1.0 200 OK\r\nX-Slow: " + b"x" * 40:
            h.wfile.write(bytes([c]))
            h.wfile.flush()
            time.sleep(0.1)

    url, _ = hostile({"/config": trickle})
    monkeypatch.setattr(http_get, "TIMEOUT", 1.0)
    fails(url, "no answer within the deadline")


def test_bodies_are_capped_as_they_stream(hostile, monkeypatch):
    def endless(h):
        h.send_response(200)
        h.end_headers()                      # no Content-Length: read until the cap
        for _ in range(64):
            h.wfile.write(b" " * 65536)

    url, _ = hostile({"/config": lambda h: send(h, " " * 300_000), "/subjects": endless})
    monkeypatch.setattr(http_get, "MAX_BODY", 100_000)
    fails(url, "/config: an answer of 300000 bytes, more than the 100000 kdump reads")
    url, _ = hostile({"/subjects": endless})
    fails(url, "/subjects?deleted=true: an answer of more than the 100000 bytes kdump reads")


def test_the_request_count_is_capped(hostile, monkeypatch):
    subjects = [f"s{i}" for i in range(100)]
    url, asked = hostile({"/subjects?": lambda h: send(h, json.dumps(subjects)),
                          "/subjects/": lambda h: send(h, "[]"), "/config": lambda h: send(h, "{}")})
    monkeypatch.setattr(registry, "MAX_REQUESTS", 30)
    fails(url, "the registry needs more than 30 requests; kdump stops there")
    assert len(asked) == 30


@pytest.mark.parametrize("where", ["http://127.0.0.2:{port}/config", "ftp://127.0.0.1:{port}/config",
                                   "https://127.0.0.1:{port}/config"])
def test_redirects_stay_on_the_same_scheme_and_host(hostile, where):
    port = []
    url, asked = hostile({"/config": lambda h: send(h, "", 302, {"Location": where.format(port=port[0])})})
    port.append(url.rsplit(":", 1)[1])
    fails(url, "kdump follows redirects only to the same scheme and host")
    assert asked == ["/config"]


def test_a_redirect_on_the_same_host_is_followed(hostile):
    url, asked = hostile({"/config": lambda h: send(h, "", 307, {"Location": "/elsewhere/config"}),
                          "/elsewhere/config": lambda h: send(h, '{"compatibilityLevel": "FULL"}'),
                          "/subjects": lambda h: send(h, "[]")})
    assert registry.records(url) == [{"key": {"keytype": "CONFIG", "subject": None, "magic": 0},
                                      "value": {"compatibilityLevel": "FULL"}}]


BAD = {
    "deep JSON": ({"/config": "[" * 100_000 + "]" * 100_000}, "/config: the answer's JSON nests too deeply"),
    "not JSON": ({"/config": "<html>"}, "/config: the answer is not JSON"),
    "config an array": ({"/config": "[1]"}, "/config: not a Schema Registry answer (a JSON array where kdump "
                                            "expects an object)"),
    "subjects an object": ({"/subjects": '{"a": 1}'}, "not a Schema Registry answer (a JSON object where kdump "
                                                      "expects an array)"),
    "a subject a number": ({"/subjects?": "[1]"}, "/subjects: not a Schema Registry answer (a subject that is "
                                                  "not a string)"),
    "a version a string": ({"/subjects?": '["a"]', "/subjects/a/versions": '["1"]'},
                           "/subjects/a/versions: not a Schema Registry answer (a version not an integer)"),
    "a schema without text": ({"/subjects?": '["a"]', "/subjects/a/versions": "[1]",
                               "/subjects/a/versions/1": '{"id": 1, "schema": 5}'},
                              "/subjects/a/versions/1: not a Schema Registry answer (no integer id or no schema text)"),
    "references not a list": ({"/subjects?": '["a"]', "/subjects/a/versions": "[1]",
                               "/subjects/a/versions/1": '{"id": 1, "schema": "\\"int\\"", "references": 7}'},
                              "references not a list of {name, subject, version}"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_answers_are_one_line(hostile, name):
    routes, message = BAD[name]
    answers = {"/config": "{}", "/subjects": "[]", **routes}
    url, _ = hostile({k: (lambda v: lambda h: send(h, v))(v) for k, v in answers.items()})
    fails(url, message)


def test_more_than_100_headers_is_one_line(hostile):
    url, _ = hostile({"/config": lambda h: send(h, "{}", headers={f"X-{i}": "y" for i in range(150)})})
    fails(url, "/config: cannot read the registry: HTTPException: got more than 100 headers")


def test_the_cli_says_one_line_and_exits_3(hostile, tmp_path):
    url, _ = hostile({"/config": lambda h: send(h, "[" * 100_000)})
    r = run_kdump("dump", PART, "--value-decoder", "jsonschema", "--schema-registry", url,
                  "--schema-cache", str(tmp_path / "c.ndjson"))
    assert (r.code, r.out) == (3, "")
    assert r.err == f"kdump: error: {url}/config: the answer's JSON nests too deeply\n"


def test_a_long_url_gets_a_cache_name_the_file_system_takes(hostile, tmp_path, monkeypatch):
    deep = "/" + "p" * 600
    url, _ = hostile({deep + "/config": lambda h: send(h, "{}"), deep + "/subjects": lambda h: send(h, "[]")})
    long_url = url + deep
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    name = registry.default_cache(long_url)
    assert len(name.rsplit("/", 1)[1]) <= 255 and name != registry.default_cache(long_url + "q")
    store, cache = registry.fetch(long_url)
    assert cache == name and len(store) == 0


def test_an_unwritable_cache_is_one_line(hostile, tmp_path):
    url, _ = hostile({"/config": lambda h: send(h, "{}"), "/subjects": lambda h: send(h, "[]")})
    (tmp_path / "file").write_text("")
    cache = tmp_path / "file" / "c.ndjson"                   # under a file: no one can write it, root neither
    r = run_kdump("dump", PART, "--value-decoder", "jsonschema", "--schema-registry", url, "--schema-cache", str(cache))
    assert (r.code, r.out) == (3, "")
    assert r.err == (f"kdump: error: {cache}: cannot write the schema cache: {tmp_path / 'file'}: File exists "
                     "(name another with --schema-cache FILE)\n")


def test_an_empty_registry_still_fetches_ids_on_demand(hostile, tmp_path):
    schema = json.dumps({"type": "object"})
    url, asked = hostile({"/config": lambda h: send(h, "{}"), "/subjects": lambda h: send(h, "[]"),
                          "/schemas/ids/12": lambda h: send(h, json.dumps({"schema": schema, "schemaType": "JSON"}))})
    r = run_kdump("dump", PART, "--value-decoder", "jsonschema", "--schema-registry", url,
                  "--schema-cache", str(tmp_path / "c.ndjson"), "-q")
    assert r.code == 0, r.err
    assert "/schemas/ids/12" in asked and "decode failed" not in r.out and r.out.count('payload: {"n":') == 2


def test_an_id_answer_past_the_body_cap_is_not_cached(hostile, tmp_path, monkeypatch):
    schema = json.dumps({"type": "object", "description": "x" * 200_000})
    url, asked = hostile({"/schemas/ids/": lambda h: send(h, json.dumps({"schema": schema, "schemaType": "JSON"}))})
    monkeypatch.setattr(http_get, "MAX_BODY", 100_000)
    cache = tmp_path / "c.ndjson"
    cache.write_text("")
    fetcher = registry.IdFetcher(url, str(cache))
    assert fetcher(12) is None and fetcher(13) is None       # after one failure the registry is not asked again
    assert asked == ["/schemas/ids/12"] and cache.read_text() == ""
    assert fetcher.failed == f"{url}/schemas/ids/12: an answer of 200081 bytes, more than the 100000 kdump reads"


def test_the_whole_read_has_a_deadline(hostile, monkeypatch):
    def slow(h):
        time.sleep(0.3)
        send(h, "[]")

    subjects = [f"s{i}" for i in range(50)]
    url, asked = hostile({"/subjects?": lambda h: send(h, json.dumps(subjects)), "/subjects/": slow,
                          "/config": lambda h: send(h, "{}")})
    monkeypatch.setattr(registry, "READ_DEADLINE", 1.0)
    fails(url, "reading the registry took more than 1 s; kdump stops there")
    assert len(asked) < 10
