"""Record-count bombs: a zstd batch of millions of empty records in a few KB.

Records are decoded a slice at a time, and a records section past STREAM_THRESHOLD from a
window of its decompressed stream, so memory stays at a window plus one slice, whatever the
count and the decompressed size: a child process's peak RSS (``resource.getrusage``) is
measured on ``dump --records --json``, the text dump and ``verify --deep``. ``--max-records-per-batch`` refuses such a
batch before decoding it, with a finding located at the batch's byte position.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kdump.encode import build_record_count_bomb, build_v2_batch
from kdump.format.codecs import DEFAULT_MAX_RECORDS
from support.run import peak_rss, run_kdump, write_segment

BOMB_RECORDS = 1_500_000     # 10.5 MB of records in ~1 KB; one list of them took ~300 MB
RSS_BOUND_KB = 120 << 10     # the interpreter, kdump and a 10.5 MB payload come to ~35 MB
# 35 MB of records in 3 KB: held whole, the payload took ~90 MB (the stream joined, then
# kept); decoded from a window, ~33 MB, the same as an empty segment's run.
BIG_BOMB_RECORDS = 5_000_000
BIG_RSS_BOUND_KB = 60 << 10

@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return write_segment(tmp_path_factory.mktemp("bomb") / "t-0", [build_record_count_bomb(BOMB_RECORDS)])


@pytest.mark.slow
@pytest.mark.parametrize("args", [("dump", "--records", "--json", "-q"), ("verify", "--deep", "-q", "--json")])
def test_memory_stays_bounded_on_a_record_count_bomb(bomb, tmp_path, args):
    code, kb = peak_rss(tmp_path / "out", args[0], bomb, *args[1:])
    assert kb < RSS_BOUND_KB, f"peak RSS {kb} KB on {BOMB_RECORDS} records"
    if args[0] == "dump":
        assert code == 0
        line = (tmp_path / "out").read_text()
        assert line.count('"offset":') == BOMB_RECORDS and line.endswith("]}\n") and line.count("\n") == 1
    else:
        assert code == 1        # every record at one offset: record_decode (out of order)
        report = json.loads((tmp_path / "out").read_text().splitlines()[0])
        assert report["records"] == BOMB_RECORDS


@pytest.fixture(scope="module")
def big_bomb(tmp_path_factory) -> Path:
    return write_segment(tmp_path_factory.mktemp("bigbomb") / "t-0", [build_record_count_bomb(BIG_BOMB_RECORDS)])


@pytest.mark.slow
@pytest.mark.parametrize("args", [("dump", "--records", "--json", "-q"), ("verify", "--deep", "-q", "--json")])
def test_memory_does_not_grow_with_the_decompressed_size(big_bomb, args):
    code, kb = peak_rss(Path(os.devnull), args[0], big_bomb, *args[1:])
    assert code == (0 if args[0] == "dump" else 1)
    assert kb < BIG_RSS_BOUND_KB, f"peak RSS {kb} KB on {BIG_BOMB_RECORDS} records ({7 * BIG_BOMB_RECORDS} bytes)"


def test_max_records_per_batch_gives_a_located_finding(tmp_path):
    first = build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")])
    seg = write_segment(tmp_path / "t-0", [first, build_record_count_bomb(50_000, base_offset=1)])
    r = run_kdump("verify", "--deep", "--json", "--max-records-per-batch", "1000", seg)
    assert r.code == 1
    report = json.loads(r.out.splitlines()[0])
    [finding] = [f for f in report["findings"] if f["kind"] == "record_count_limit"]
    assert finding["position"] == len(first) and finding["offset"] == 1
    assert finding["message"] == ("batch at offset 1 declares 50000 records, more than the limit of 1000 "
                                  "(--max-records-per-batch); not decoded")

    r = run_kdump("dump", "--records", "--json", "--max-records-per-batch", "1000", seg)
    assert r.code == 1
    lines = [json.loads(x) for x in r.out.splitlines()]
    assert len(lines[0]["records"]) == 1 and "records" not in lines[1]
    assert lines[1]["records_error"] == finding["message"]
    assert f"{seg}:{len(first)}: batch at offset 1 declares 50000 records" in r.err

    # the default is the most Kafka could have written; the whole batch decodes under it
    assert DEFAULT_MAX_RECORDS == (2 ** 31 - 1) // 7
    r = run_kdump("dump", "--records", "--json", "-q", seg)
    assert r.code == 0 and r.out.count('"offset":') == 50_001


def test_a_streamed_batch_damaged_mid_way_shows_its_records_then_the_error(tmp_path):
    """A batch of more records than one slice, whose records stop decoding in a later slice:
    the slices before are shown, then the error (the line closes with records_error)."""
    from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET
    from kdump.format.crc import crc32c
    from kdump.format.records import RECORDS_SLICE

    # records of 8 bytes (their offset deltas take two); the fourth from the end gets length -64
    batch = bytearray(build_v2_batch([(i, 0, None, None) for i in range(RECORDS_SLICE + 10)]))
    batch[-32] = 0x7F
    batch[CRC_OFFSET:CRC_OFFSET + 4] = crc32c(bytes(batch[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
    seg = write_segment(tmp_path / "t-0", [bytes(batch)])
    r = run_kdump("dump", "--records", "--json", "-q", seg)
    assert r.code == 1
    [line] = [json.loads(x) for x in r.out.splitlines()]
    assert len(line["records"]) == RECORDS_SLICE
    assert line["records_error"] == f"Invalid record size -64 in record {RECORDS_SLICE + 6} of batch at offset 0"


def test_verify_deep_pays_for_a_bombs_bytes_not_its_count(tmp_path, monkeypatch):
    """A 5.8 KB zstd batch of 9 million copies of one record (63 MB decompressed) cost
    2.8 s of ``verify --deep``: it was decompressed whole twice, and every record decoded to
    count them. Its second record is out of order: the batch is damaged there, and nothing
    past the first stretch of its stream is decompressed (measured in bytes, not seconds)."""
    from kdump.format import record_stream
    from kdump.format.codecs import STREAM_THRESHOLD

    count = 9_000_000
    seg = write_segment(tmp_path / "t-0", [build_record_count_bomb(count)] * 3)
    produced = []
    real = record_stream.decompress_chunks

    def counted(*a, **k):
        for piece in real(*a, **k):
            produced.append(len(piece))
            yield piece

    monkeypatch.setattr(record_stream, "decompress_chunks", counted)
    r = run_kdump("verify", "--deep", "--json", seg)
    assert r.code == 1
    report = json.loads(r.out.splitlines()[0])
    assert report["findings"][0]["message"] == ("record offset 0 is out of order or outside the batch's range "
                                                f"0..{count - 1}")
    assert sum(produced) < 3 * (STREAM_THRESHOLD + (8 << 20)), sum(produced)     # of 3 x 63 MB
