"""`kdump records`: the flat record stream, its format string, filters, limits, the
transaction outcome of each record and damage inside the stream. A real consumer is the
oracle of --isolation in tests/kafka/test_records_consumer.py."""

from __future__ import annotations

import base64
import json

import pytest

from support.run import GENERATED, run_kdump

HEADERS = GENERATED / "headers-0"
TXN = GENERATED / "transactions-0"
TORN = GENERATED / "torn-tail-0"


def _json(r) -> list[dict]:
    return [json.loads(line) for line in r.out.splitlines()]


def test_a_flat_object_a_record_with_its_partition_and_batch():
    r = run_kdump("records", HEADERS, "--json", "--limit", "2")
    assert r.code == 0 and r.err == ""
    first, second = _json(r)
    assert first["object"] == "record" and (first["topic"], first["partition"], first["offset"]) == ("headers", 0, 0)
    assert base64.b64decode(first["key"]) == b"k0" and base64.b64decode(first["value"]) == b"v0"
    assert first["headers"][0] == {"key": "trace-id", "value": base64.b64encode(b"abc123").decode()}
    assert first["txn"] is None and first["batch"]["magic"] == 2 and first["batch"]["position"] == 0
    assert (second["key"], second["key_size"]) == (None, -1)


def test_the_format_string_draws_each_record_as_kcat_does():
    r = run_kdump("records", HEADERS, "-f", "%t/%p@%o %K:%k %S:%s [%h]\\n", "--limit", "3")
    assert r.code == 0
    assert r.out == ("headers/0@0 2:k0 2:v0 [trace-id=abc123,nullable=]\n"
                     "headers/0@1 -1: 8:null key [ключ=значение,キー=,emoji-🎉=🎉]\n"
                     "headers/0@2 9:tombstone -1: [=empty key,dup=1,dup=2,dup=]\n")


def test_an_unknown_format_token_is_a_usage_error():
    r = run_kdump("records", HEADERS, "-f", "%q")
    assert r.code == 2
    assert r.err == "kdump: error: --format-string: unknown token '%q' (known: %t, %p, %o, %k, %K, %s, %S, %T, " \
                    "%h, %x, %%)\n"


@pytest.mark.parametrize("args, offsets", [
    (("--key", "k0"), [0, 6, 12]),
    (("--key-regex", "^k"), [0, 6, 12]),
    (("--key-hex", "6b30"), [0, 6, 12]),
    (("--value-hex", "6e756c6c206b6579"), [1, 7, 13]),
    (("--header", "dup=2"), [2, 8, 14]),
    (("--header", "dup"), [2, 8, 14]),
    (("--header-regex", "trace-id=^abc"), [0, 6, 12]),
    (("--key-regex", "^k", "--header", "nullable"), [0, 6, 12]),
    (("--start-offset", "6", "--key-regex", "^k", "--limit", "1"), [6]),
])
def test_filters_on_key_value_and_headers(args, offsets):
    r = run_kdump("records", HEADERS, "-f", "%o\\n", *args)
    assert r.code == 0, r.err
    assert [int(x) for x in r.out.split()] == offsets


def test_each_record_says_how_its_transaction_ended_and_read_committed_drops_aborts():
    r = run_kdump("records", TXN, "-f", "%o:%x ")
    assert r.out == ("0:committed 1:committed 2:committed 3:aborted 4:aborted 5:committed 6:committed 8: 9: "
                     "10:aborted 11:aborted 13:aborted 14:aborted 15:committed 16:committed 19:aborted 20:aborted "
                     "21:aborted 23:committed 24:committed 25:committed ")
    r = run_kdump("records", TXN, "-f", "%o ", "--isolation", "read_committed")
    assert r.out == "0 1 2 5 6 8 9 15 16 23 24 25 "


def test_tail_keeps_the_last_records_of_each_partition():
    r = run_kdump("records", TXN, HEADERS, "-f", "%t:%o ", "--tail", "2")
    assert r.out == "transactions:24 transactions:25 headers:16 headers:17 "      # in the order of PATHS


def test_damage_is_an_object_of_the_stream_and_exit_1():
    r = run_kdump("records", TORN, "--json")
    assert r.code == 1
    rows = _json(r)
    assert [x["object"] for x in rows] == ["record"] * 6 + ["damage"]
    assert rows[-1] == {"object": "damage", "kind": "torn_tail", "class": "damage",
                        "file": f"{TORN}/00000000000000000000.log", "position": 667, "offset": 6,
                        "message": "entry of 227 bytes runs past the end (113 bytes left)"}
    assert r.err == (f"kdump: error: {TORN}/00000000000000000000.log:667: torn_tail: entry of 227 bytes runs past "
                     "the end (113 bytes left)\n")


def test_a_terminal_gets_control_characters_escaped(tmp_path):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    r = run_kdump("records", HEADERS, "-f", "%h\\n", "--start-offset", "3", "--limit", "1", out=out)
    assert r.code == 0
    assert "\x1b" not in r.out and "\x00" not in r.out and "\\x00" in r.out
