"""Record-count bombs in legacy wrappers: a gzip v1 wrapper of 2 million empty
inner messages, 68 MB decompressed in a 5.5 MB segment.

One list of its inner messages took ~600 MB in ``verify --deep`` and ~1.3 GB in ``dump --records
--json``. Now the walk counts the inner set from a window of its stream and the records come a
slice at a time, so memory stays at a window plus one slice: a child process's peak RSS
(``resource.getrusage``) is measured. ``--max-records-per-batch`` applies to a wrapper's inner
messages too, with the same located finding as for a v2 batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdump.encode import build_legacy_count_bomb, build_legacy_wrapper, build_v2_batch
from kdump.format.records import RECORDS_SLICE
from support.run import peak_rss, run_kdump, write_segment

BOMB_MESSAGES = 2_000_000
RSS_BOUND_KB = 120 << 10     # ~50 MB measured: the interpreter, kdump, the 5.5 MB wrapper (twice) and a window

@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return write_segment(tmp_path_factory.mktemp("legacybomb") / "t-0", [build_legacy_count_bomb(BOMB_MESSAGES)])


@pytest.mark.slow
@pytest.mark.parametrize("args", [("dump", "--records", "--json", "-q"), ("verify", "--deep", "-q", "--json")])
def test_memory_stays_bounded_on_a_legacy_record_count_bomb(bomb, tmp_path, args):
    code, kb = peak_rss(tmp_path / "out", args[0], bomb, *args[1:])
    assert code == 0
    assert kb < RSS_BOUND_KB, f"peak RSS {kb} KB on {BOMB_MESSAGES} inner messages"
    if args[0] == "dump":
        text = (tmp_path / "out").read_text()
        assert text.count('"offset":') == BOMB_MESSAGES and text.count("\n") == 1 and text.endswith("]}\n")
        assert text.endswith(f'{{"offset":{BOMB_MESSAGES - 1},"timestamp":-1,"key_size":-1,"value_size":-1,'
                             '"sequence":-1,"key":null,"value":null,"headers":[],"crc":1531049187,'
                             '"crc_valid":true}]}\n')
    else:
        report = json.loads((tmp_path / "out").read_text().splitlines()[0])
        assert (report["records"], report["first_offset"], report["last_offset"]) == (BOMB_MESSAGES, 0,
                                                                                         BOMB_MESSAGES - 1)
        assert not [f for f in report["findings"] if f["class"] == "damage"]


def test_max_records_per_batch_counts_inner_messages(tmp_path):
    first = build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")])
    n = RECORDS_SLICE + 10
    wrapper = build_legacy_wrapper([(1 + i, 5, None, b"x") for i in range(n)], magic=1, codec=1)
    seg = write_segment(tmp_path / "t-0", [first, wrapper])
    message = (f"compressed message at offset {n} holds {n} inner messages, more than the limit of 1000 "
               "(--max-records-per-batch); not decoded")
    r = run_kdump("verify", "--deep", "--json", "--max-records-per-batch", "1000", seg)
    assert r.code == 1
    report = json.loads(r.out.splitlines()[0])
    [finding] = [f for f in report["findings"] if f["kind"] == "record_count_limit"]
    assert (finding["position"], finding["offset"], finding["message"]) == (len(first), 1, message)

    for args in (("--json",), ()):
        r = run_kdump("dump", "--records", *args, "--max-records-per-batch", "1000", seg)
        assert r.code == 1
        assert f"{seg}:{len(first)}: {message}" in r.err
    lines = [json.loads(x) for x in run_kdump("dump", "--records", "--json", "--max-records-per-batch", "1000",
                                              seg).out.splitlines()]
    assert len(lines[0]["records"]) == 1 and "records" not in lines[1] and lines[1]["records_error"] == message

    r = run_kdump("dump", "--records", "--json", "-q", "--max-records-per-batch", str(n), seg)
    assert r.code == 0 and r.out.count('"offset":') == n + 1


LEGACY_DIRS = ["generated/gzip-v1-0", "generated/lz4-v0-0", "generated/lz4-v1-0", "generated/snappy-v1-0",
               "real/asayers__kafkalite/tests/test-data/fs-data/hamlet-gzip-0",
               "real/asayers__kafkalite/tests/test-data/fs-data/hamlet-snappy-0",
               # v2 batches of more than a (shrunk) slice take the same path: gaps, control records
               "generated/compacted-0", "generated/transactions-0", "generated/mixed-codecs-v2-0"]
VIEWS = [("dump", "--records", "--json"), ("dump", "--records", "--data", "--json", "--start-offset", "3"),
         ("dump", "--records"), ("dump", "--records", "--data", "--end-offset", "40"),
         ("verify", "--deep", "--json")]


@pytest.mark.parametrize("path", LEGACY_DIRS)
def test_wrappers_streamed_print_what_they_printed_whole(path, monkeypatch):
    """Every legacy fixture, each view: the output when its wrappers are read a slice of two
    messages at a time from a window of their stream (the path of a huge wrapper) is exactly
    the output of today's path (the inner set held whole, drawn by C or decoded as one list)."""
    from kdump.format import legacy, legacy_stream
    from kdump.storage import record_reader as reader
    from support.run import FIXTURES

    target = FIXTURES / path
    files = ",".join(str(p) for p in sorted(target.glob("*.log")))
    views = [(*v[:1], target, *v[1:], "-j", "1") for v in VIEWS]
    views.append(("dump", "--files", files, "--deep-iteration", "--print-data-log"))
    expected = [run_kdump(*map(str, v)) for v in views]
    monkeypatch.setattr(reader, "RECORDS_SLICE", 2)
    monkeypatch.setattr(legacy_stream, "RECORDS_SLICE", 2)
    monkeypatch.setattr(legacy, "STREAM_THRESHOLD", 0)
    monkeypatch.setattr(legacy, "WINDOW", 64)
    for v, want in zip(views, expected):
        assert run_kdump(*map(str, v)) == want, v
