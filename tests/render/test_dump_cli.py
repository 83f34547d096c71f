"""``kdump dump`` from the command line: DumpLogSegments parity, JSON model, filters, bad input.

The DumpLogSegmentsTest scenarios of kafka-reference.md §2 are ported here (#1, #2,
#13, #18, #19, #23); the decoder scenarios live with the decoders.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys

import pytest

from kdump import _accel
from kdump import encode as build
from kdump.format.codecs import GZIP, NONE
from support.run import GENERATED, REAL, run_kdump, write_segment

NOW = 1_700_000_000_000

# -- DumpLogSegmentsTest's shared fixture: 4 uncompressed batches ----------------------------------


def simple_records_segment(tmp_path):
    batches, offset = [], 0
    shapes = [(10, True, True, 2), (20, True, False, 3), (20, False, True, 5), (10, False, False, 7)]
    for count, with_key, with_value, step in shapes:
        recs = [(i, NOW + step * i, f"message key {offset + i}".encode() if with_key else None,
                 f"message value {offset + i}".encode() if with_value else None) for i in range(count)]
        batches.append(build.build_v2_batch(recs, base_offset=offset, partition_leader_epoch=0))
        offset += count
    return write_segment(tmp_path / "test-0", batches), shapes


def tokens(line: str) -> dict[str, str]:
    """Split a DumpLogSegments line into {name: value}; every token must be `name:` then a value."""
    parts = line.split()
    assert len(parts) % 2 == 0, line
    out = {}
    for name, value in zip(parts[::2], parts[1::2]):
        assert name.endswith(":"), (name, line)
        out[name[:-1]] = value
    return out


def test_batch_and_record_metadata_output(tmp_path):
    """#1: every batch-line token is `field: value`; record lines carry record fields only."""
    batches = [
        build.build_v2_batch([(0, NOW, b"a", b"1"), (1, NOW, b"b", b"2")], base_offset=0, partition_leader_epoch=0),
        build.build_v2_batch([(0, NOW, b"c", b"1"), (1, NOW, None, b"d")], base_offset=2, codec=GZIP,
                             partition_leader_epoch=3),
        build.build_v2_batch([(0, NOW, b"e", None), (1, NOW, None, b"f"), (2, NOW, None, b"g")], base_offset=4,
                             partition_leader_epoch=3),
        build.build_v2_batch([(0, NOW, b"h", b"i")], base_offset=7, producer_id=29342342, producer_epoch=15,
                             base_sequence=234123, partition_leader_epoch=3),
        build.build_v2_batch([(0, NOW, b"j", b"k"), (1, NOW, b"l", b"m")], base_offset=8, codec=GZIP,
                             producer_id=98323, producer_epoch=99, base_sequence=266, is_transactional=True,
                             partition_leader_epoch=5),
        build.build_end_txn_marker(True, base_offset=10, producer_id=98323, producer_epoch=99,
                                   coordinator_epoch=100, partition_leader_epoch=7),
    ]
    seg = write_segment(tmp_path / "t-0", batches)
    r = run_kdump("dump", seg, "--records")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"Dumping {seg}"
    assert lines[1] == "Log starting offset: 0"
    batch_lines = [tokens(line) for line in lines[2:] if line.startswith("baseOffset:")]
    assert [b["baseOffset"] for b in batch_lines] == ["0", "2", "4", "7", "8", "10"]
    assert [b["lastOffset"] for b in batch_lines] == ["1", "3", "6", "7", "9", "10"]
    assert [b["count"] for b in batch_lines] == ["2", "2", "3", "1", "2", "1"]
    assert [b["partitionLeaderEpoch"] for b in batch_lines] == ["0", "3", "3", "3", "5", "7"]
    assert [b["compresscodec"] for b in batch_lines] == ["none", "gzip", "none", "none", "gzip", "none"]
    assert [b["isTransactional"] for b in batch_lines] == ["false"] * 4 + ["true", "true"]
    assert [b["isControl"] for b in batch_lines] == ["false"] * 5 + ["true"]
    assert batch_lines[3]["producerId"] == "29342342" and batch_lines[3]["producerEpoch"] == "15"
    assert batch_lines[3]["baseSequence"] == "234123" and batch_lines[3]["lastSequence"] == "234123"
    assert batch_lines[4]["baseSequence"] == "266" and batch_lines[4]["lastSequence"] == "267"
    assert all(b["isvalid"] == "true" and b["magic"] == "2" for b in batch_lines)
    record_lines = [line for line in lines if line.startswith("| ")]
    assert len(record_lines) == 11
    forbidden = ("baseOffset", "lastOffset", "partitionLeaderEpoch", "producerId", "producerEpoch",
                 "baseSequence", "isTransactional", "isControl", "compresscodec")
    for line in record_lines:
        fields = tokens(line[2:].split(" endTxnMarker:")[0])
        assert {"offset", "CreateTime", "keySize", "valueSize", "sequence", "headerKeys"} <= set(fields)
        assert not any(f in fields for f in forbidden)
    assert record_lines[-1].endswith("endTxnMarker: COMMIT coordinatorEpoch: 100")


def test_print_data_log_alternates_batches_and_records(tmp_path):
    """#2: a batch line, then its record lines, with key/payload at the end when present."""
    seg, shapes = simple_records_segment(tmp_path)
    for flags in (["--data"], ["--print-data-log"], ["--print-data-log", "--deep-iteration"],
                  ["--value-decoder", "utf8"], ["--key-decoder", "utf8"]):
        r = run_kdump("dump", seg, *flags)
        assert r.code == 0, r.err
        lines = r.out.splitlines()[2:]
        offset = 0
        i = 0
        for count, with_key, with_value, _ in shapes:
            assert lines[i].startswith(f"baseOffset: {offset} lastOffset: "), lines[i]
            i += 1
            for n in range(count):
                line = lines[i]
                assert line.startswith(f"| offset: {offset + n} ")
                tail = "headerKeys: []"
                if with_key:
                    tail += f" key: message key {offset + n}"
                if with_value:
                    tail += f" payload: message value {offset + n}"
                assert line.endswith(tail), line
                i += 1
            offset += count
    r = run_kdump("dump", seg)
    assert not re.search(r"(?s).*offset: [0-9]* isvalid.*", r.out)
    assert "| offset" not in r.out


def test_max_bytes_shows_only_whole_batches(tmp_path):
    """#19: --max-bytes = sum of the first two sizes gives exactly two batch lines."""
    seg, _ = simple_records_segment(tmp_path)
    sizes = [int(m) for m in re.findall(r"size: (\d+)", run_kdump("dump", seg).out)]
    r = run_kdump("dump", seg, "--max-bytes", sizes[0] + sizes[1])
    assert r.code == 0
    assert r.out.count("baseOffset:") == 2
    assert "invalid bytes" not in r.out
    r = run_kdump("dump", seg, "--max-bytes", sizes[0] + sizes[1] + 5)
    assert r.out.count("baseOffset:") == 2


def test_empty_index(tmp_path):
    """#18: a zero-length .index prints `<path> is empty.`"""
    seg, _ = simple_records_segment(tmp_path)
    index = seg.with_suffix(".index")
    index.write_bytes(b"")
    r = run_kdump("dump", index)
    assert r.code == 0
    assert r.out == f"Dumping {index}\n{index} is empty.\n"


def test_legacy_output_format(tmp_path):
    """#23: a magic-1 file named 00000000000000001000.log; braces balanced (no stray `}`)."""
    msgs = [build.build_legacy_message(1000 + i, b"k", b"v%d" % i, magic=1, timestamp=NOW + i) for i in range(3)]
    seg = write_segment(tmp_path / "legacy-0", msgs, base_offset=1000)
    r = run_kdump("dump", seg, "--deep-iteration")
    assert r.code == 0
    assert "Log starting offset: 1000" in r.out
    assert "isValid:" in r.out and "crc:" in r.out
    assert r.out.count("{") == r.out.count("}")
    first = r.out.splitlines()[2]
    assert re.fullmatch(r"offset: 1000 position: 0 CreateTime: 1700000000000 size: \d+ magic: 1 "
                        r"compresscodec: none crc: \d+ isvalid: true", first)


def test_missing_file_exit_3(tmp_path):
    """#13: a file that does not exist: one line naming it, exit 3, no traceback."""
    r = run_kdump("dump", tmp_path / "nosuchfile" / "00000000000000000000.log")
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert r.err.startswith("kdump: error: ") and "nosuchfile" in r.err and "no such file" in r.err


def test_directory_with_no_segments_exit_2(tmp_path):
    (tmp_path / "empty-0").mkdir()
    r = run_kdump("dump", tmp_path / "empty-0")
    assert r.code == 2
    assert "no log segments" in r.err and "Traceback" not in r.err


def test_unknown_file_kind_exit_2(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    r = run_kdump("dump", p)
    assert r.code == 2 and "not a file kdump reads" in r.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_exit_3(tmp_path):
    seg, _ = simple_records_segment(tmp_path)
    seg.chmod(0o200)
    r = run_kdump("dump", seg)
    assert r.code == 3 and "permission denied" in r.err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("argv", [
    ("dump", "00000000000000000000.log"),
    ("verify", "00000000000000000000.log"),
    ("dump", "leader-epoch-checkpoint"),
    ("dump", "00000000000000000000.index"),
    ("index", "00000000000000000000.index"),
    ("timeindex", "00000000000000000000.timeindex"),
])
def test_a_fifo_named_like_a_kafka_file_is_refused_without_waiting(tmp_path, argv):
    # Opening a FIFO for reading waits for a writer: kdump must not hang on one.
    command, name = argv
    fifo = tmp_path / "t-0" / name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "kdump", command, str(fifo)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert f"kdump: error: {fifo}: not a regular file" in r.stderr or "unreadable: not a regular file" in r.stdout
    assert "Traceback" not in r.stderr


_TRUNCATE_AFTER_MAPPING = """
import os, sys
import kdump.storage.mapped as storage_mapped
from kdump.cli import main

mapped = storage_mapped.MappedFile.__init__

def map_then_lose_the_tail(self, path, *args, **kwargs):
    mapped(self, path, *args, **kwargs)
    if path.endswith(".log"):
        os.truncate(path, 100)   # another process truncates the segment under the mapping

storage_mapped.MappedFile.__init__ = map_then_lose_the_tail
main(sys.argv[1:])
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="SIGBUS is POSIX")
@pytest.mark.parametrize("argv", [("dump", "--records", "--data"), ("verify",), ("dump", "--json")])
def test_a_segment_truncated_while_mapped_ends_in_one_located_line(tmp_path, argv):
    if _accel.native() is None:
        pytest.skip("the SIGBUS handler is in the C accelerator, which is off or not built")
    big = [build.build_v2_batch([(i, NOW, b"k", b"v" * 4000) for i in range(64)], base_offset=64 * n)
           for n in range(64)]
    seg = write_segment(tmp_path / "live-0", big)
    r = subprocess.run([sys.executable, "-c", _TRUNCATE_AFTER_MAPPING, *argv, str(seg)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 3, (r.returncode, r.stderr[-500:])
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines
    assert re.fullmatch(rf"kdump: error: {re.escape(str(seg))}:\d+: the file was truncated by another process "
                        r"while kdump read it \(it now has 100 bytes\); run again once it is stable", lines[0])


# -- bad input: everything before the damage is shown, then one located line --------------------


def _segment_with_bad_last(tmp_path, bad: bytes):
    good = [build.build_v2_batch([(0, NOW, b"k", b"v")], base_offset=i) for i in range(3)]
    return write_segment(tmp_path / "bad-0", good + [bad]), sum(len(b) for b in good)


def _assert_one_error(r, path, position, words):
    assert r.code == 1, (r.code, r.err)
    assert "Traceback" not in r.err
    errors = r.err.splitlines()
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"kdump: error: {path}:{position}: "), errors[0]
    assert words in errors[0], errors[0]


def test_truncated_last_batch(tmp_path):
    whole = build.build_v2_batch([(0, NOW, b"k", b"v" * 50)], base_offset=3)
    seg, good = _segment_with_bad_last(tmp_path, whole[:40])
    r = run_kdump("dump", seg)
    assert r.out.count("baseOffset:") == 3
    assert r.out.rstrip().endswith(f"Found 40 invalid bytes at the end of {seg.name}")
    _assert_one_error(r, seg, good, "runs past the end")


def test_length_field_2_31_minus_1(tmp_path):
    whole = bytearray(build.build_v2_batch([(0, NOW, b"k", b"v")], base_offset=3))
    whole[8:12] = (2**31 - 1).to_bytes(4, "big")
    seg, good = _segment_with_bad_last(tmp_path, bytes(whole))
    r = run_kdump("dump", seg, "--records")
    assert r.out.count("baseOffset:") == 3
    assert f"Found {len(whole)} invalid bytes" in r.out
    _assert_one_error(r, seg, good, "runs past the end")


def test_record_count_minus_one(tmp_path):
    bad = build.build_v2_batch([(0, NOW, b"k", b"v")], base_offset=3, records_count=-1)
    seg, good = _segment_with_bad_last(tmp_path, bad)
    r = run_kdump("dump", seg, "--records", "--json")
    objs = [json.loads(line) for line in r.out.splitlines()]
    assert len(objs) == 4 and objs[3]["count"] == -1 and objs[3]["crc_valid"] is True
    assert "records" not in objs[3] and "invalid record count" in objs[3]["records_error"]
    _assert_one_error(r, seg, good, "invalid record count")


def test_compressed_payload_that_does_not_decompress(tmp_path):
    from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD
    from kdump.format.crc import crc32c

    bad = bytearray(build.build_v2_batch([(i, NOW, b"k", b"value %d" % i) for i in range(5)], base_offset=3,
                                         codec=GZIP))
    for i in range(RECORD_BATCH_OVERHEAD + 10, len(bad)):
        bad[i] ^= 0x5A
    bad[CRC_OFFSET:CRC_OFFSET + 4] = crc32c(bytes(bad[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
    seg, good = _segment_with_bad_last(tmp_path, bytes(bad))
    r = run_kdump("dump", seg, "--records")
    assert r.out.count("baseOffset:") == 4 and r.out.count("| offset:") == 3
    _assert_one_error(r, seg, good, "gzip")


def test_file_that_is_not_a_segment(tmp_path):
    d = tmp_path / "junk-0"
    d.mkdir()
    seg = d / "00000000000000000000.log"
    seg.write_text("this is a text file, not a Kafka segment\n" * 4)
    r = run_kdump("dump", seg)
    assert r.code == 1 and "Traceback" not in r.err
    assert r.err.startswith(f"kdump: error: {seg}:0: ")


def test_bad_crc_is_shown_and_reported(tmp_path):
    bad = bytearray(build.build_v2_batch([(0, NOW, b"k", b"v")], base_offset=3))
    bad[-1] ^= 1
    seg, good = _segment_with_bad_last(tmp_path, bytes(bad))
    r = run_kdump("dump", seg)
    assert r.out.splitlines()[-1].endswith("isvalid: false")
    _assert_one_error(r, seg, good, "invalid CRC")


# -- JSON model ----------------------------------------------------------------------------------

BATCH_KEYS = ["object", "file", "position", "base_offset", "last_offset", "count", "size", "magic", "crc", "crc_valid",
              "compression", "timestamp_type", "base_timestamp", "max_timestamp", "partition_leader_epoch",
              "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control",
              "delete_horizon_ms"]
RECORD_KEYS = ["offset", "timestamp", "key_size", "value_size", "sequence", "key", "value", "headers"]


@pytest.mark.parametrize("name", sorted(p.name for p in GENERATED.iterdir() if p.is_dir() and p.name != "torn-tail-0"))
def test_json_equals_model_to_dict(name):
    """The preformatted JSON fast path equals json.dumps of the model's to_dict()."""
    from kdump.format.walk import Walker, decode_records
    from kdump.storage.mapped import MappedFile

    part = GENERATED / name
    r = run_kdump("dump", part, "--data", "--encoding", "base64", "--json", "--no-auto-decode")
    assert r.code == 0, r.err
    objs = [json.loads(line) for line in r.out.splitlines()]
    expected = []
    for seg in sorted(part.glob("*.log")) + sorted(part.glob("*-*.checkpoint")):
        m = MappedFile(str(seg))
        for b in Walker(m.buf):
            d = {"object": "batch", "file": str(seg), **b.to_dict()}
            d["records"] = [rec.to_dict() for rec in decode_records(m.buf, b)]
            expected.append(d)
    assert objs == expected
    for o in objs:
        assert list(o)[:len(BATCH_KEYS)] == BATCH_KEYS
        for rec in o["records"]:
            assert list(rec)[:len(RECORD_KEYS)] == RECORD_KEYS


def test_encodings_and_decoders(tmp_path):
    recs = [(0, NOW, (7).to_bytes(4, "big"), (2**40).to_bytes(8, "big"), [("h", b"\x00\xff"), ("n", None)]),
            (1, NOW, b"\xff\xfe", b'{"a": [1, 2]}', [])]
    seg = write_segment(tmp_path / "enc-0", [build.build_v2_batch(recs)])
    out = [json.loads(x) for x in run_kdump("dump", seg, "--data", "--json", "--encoding", "hex").out.splitlines()]
    r0, r1 = out[0]["records"]
    assert r0["key"] == "00000007" and r0["headers"] == [{"key": "h", "value": "00ff"}, {"key": "n", "value": None}]
    assert r1["key"] == "fffe"
    out = [json.loads(x) for x in run_kdump("dump", seg, "--data", "--json", "--encoding", "base64").out.splitlines()]
    assert base64.b64decode(out[0]["records"][1]["value"]) == b'{"a": [1, 2]}'
    out = [json.loads(x) for x in run_kdump("dump", seg, "--json", "--key-decoder", "int",
                                           "--value-decoder", "long").out.splitlines()]
    r0, r1 = out[0]["records"]
    assert r0["key_decoded"] == 7 and r0["value_decoded"] == 2**40
    # A 2-byte key is too short; a 13-byte value is read as Kafka's LongDecoder does: its first 8 bytes.
    assert "key_decode_error" in r1 and r1["value_decoded"] == int.from_bytes(b'{"a": [1', "big", signed=True)
    out = [json.loads(x) for x in run_kdump("dump", seg, "--json", "--value-decoder", "json").out.splitlines()]
    assert out[0]["records"][1]["value_decoded"] == {"a": [1, 2]}
    text = run_kdump("dump", seg, "--data").out
    assert "key: \ufffd\ufffd" in text          # utf8 replaces invalid bytes, like Java's String


# -- filters and index seek ----------------------------------------------------------------------

PINTEREST = REAL / "pinterest__tiered-storage" / "ts-consumer" / "src" / "test" / "resources" / "log-files"


def _offsets(r):
    return [rec["offset"] for line in r.out.splitlines() for rec in json.loads(line).get("records", [])]


def test_offset_range_on_a_partition_dir():
    part = next(p for p in sorted(PINTEREST.iterdir()) if p.is_dir())
    everything = _offsets(run_kdump("dump", part, "--records", "--json"))
    lo, hi = everything[len(everything) // 3], everything[2 * len(everything) // 3]
    r = run_kdump("dump", part, "--records", "--json", "--start-offset", lo, "--end-offset", hi)
    assert r.code == 0
    assert _offsets(r) == [o for o in everything if lo <= o <= hi]
    # Segments wholly outside the range are not even opened.
    files = {json.loads(line)["file"] for line in r.out.splitlines()}
    assert len(files) < len(list(part.glob("*.log")))


def test_seek_with_index_gives_the_same_records():
    seg = REAL / "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test" / \
        "00000000000000007729.log"
    assert seg.with_suffix(".index").stat().st_size > 64
    everything = _offsets(run_kdump("dump", seg, "--records", "--json"))
    target = everything[-5]
    from kdump.storage.levels import expand
    from kdump.storage.record_reader import Filters, SegmentReader

    reader = SegmentReader(expand(str(seg))[0], Filters(start_offset=target), records=True)
    got = [r.offset for it in reader for r in it.records]
    assert got == everything[-5:]
    assert reader.start_position > 0 and "offset index" in reader.seek_note


def test_time_range():
    part = GENERATED / "mixed-codecs-v2-0"
    recs = [rec for line in run_kdump("dump", part, "--records", "--json").out.splitlines()
            for rec in json.loads(line)["records"]]
    times = sorted({r["timestamp"] for r in recs})
    lo, hi = times[1], times[-2]
    r = run_kdump("dump", part, "--records", "--json", "--start-time", lo, "--end-time", hi)
    got = [rec["offset"] for line in r.out.splitlines() for rec in json.loads(line)["records"]]
    assert got == [x["offset"] for x in recs if lo <= x["timestamp"] <= hi]
    iso = run_kdump("dump", part, "--records", "--json", "--start-time", "2023-11-14T22:13:20Z")
    assert iso.code == 0


def test_bad_time_is_a_usage_error():
    r = run_kdump("dump", GENERATED / "zstd-v2-0", "--start-time", "yesterday")
    assert r.code == 2 and "ISO-8601" in r.err


def test_several_paths_and_a_log_dir():
    r = run_kdump("dump", GENERATED / "zstd-v2-0", GENERATED / "gzip-v1-0", "--json")
    files = [json.loads(line)["file"] for line in r.out.splitlines()]
    assert files == sorted(files, key=lambda f: (not f.startswith(str(GENERATED / "zstd")), f))
    r = run_kdump("dump", REAL / "BiggerBrain__kafka" / "data", "--json")
    assert r.code == 0 and r.out


def test_text_view_of_all_generated_sets_matches_golden():
    """Golden text (kafka-dump-log lines) for every generated set; KDUMP_UPDATE_GOLDEN=1 rewrites."""
    golden = GENERATED.parent.parent / "tests" / "golden" / "generated-dump.txt"
    parts = sorted(p for p in GENERATED.iterdir() if p.is_dir())
    r = run_kdump("dump", *parts, "--data", "--no-auto-decode")
    text = r.out.replace(str(GENERATED), "GENERATED")
    if os.environ.get("KDUMP_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert r.code == 1        # the torn-tail set is damaged on purpose


def test_table_view_draws_on_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")        # (a 40-column table folds its headings)
    r = run_kdump("dump", GENERATED / "headers-0", "--format", "table", "--data", "--color", "never")
    assert r.code == 0
    assert "offset" in r.out and "headers" in r.out and str(GENERATED / "headers-0") in r.out.replace("\n", "")


def test_no_codec_means_no_decompression(tmp_path):
    seg = write_segment(tmp_path / "n-0", [build.build_v2_batch([(0, NOW, None, b"x")], codec=NONE)])
    assert run_kdump("dump", seg, "--records").code == 0


def _copy_into(directory, fixture_dir_name: str = "snappy-v1-0"):
    import shutil

    directory.mkdir(parents=True)
    src = GENERATED / fixture_dir_name
    for name in os.listdir(src):
        if name.endswith(".log"):
            shutil.copy(src / name, directory / name)
    return directory


def test_file_names_that_are_not_utf8_are_printed_not_fatal(tmp_path):
    # Python hands such names over as surrogates; every output escapes them as \udcXX, and a
    # --json consumer gets the name's bytes back with os.fsencode().
    root = os.fsencode(str(tmp_path))
    try:
        os.mkdir(root + b"/logs")
        part = tmp_path / os.fsdecode(b"logs/t\xff-0")
        _copy_into(part)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    logs = tmp_path / "logs"
    for argv in (("verify",), ("dump",), ("dump", "--records", "--json"), ("info",), ("info", "--json"),
                 ("recover",), ("verify", "--format", "table"), ("index",)):
        # A child process: the escaping happens where text meets the real stdout's encoder.
        r = subprocess.run([sys.executable, "-m", "kdump", *argv, str(logs)], capture_output=True, timeout=120)
        assert r.returncode == 0 and b"internal error" not in r.stderr, (argv, r.stderr)
        assert b"t\\udcff-0" in r.stdout or "table" in argv, (argv, r.stdout[:300])   # a table cell may cut it
    r = subprocess.run([sys.executable, "-m", "kdump", "verify", "--json", str(logs)], capture_output=True,
                       timeout=120)
    report = json.loads(r.stdout.splitlines()[0])
    assert os.fsencode(report["file"]).startswith(root + b"/logs/t\xff-0/")
    for fmt in ("ndjson", "parquet"):
        r = run_kdump("export", logs, "--out", tmp_path / f"out-{fmt}", "--format", fmt)
        assert r.code == 0, (fmt, r.err)
        assert os.path.isdir(tmp_path / f"out-{fmt}" / "topic=t\\udcff")


def test_rich_markup_in_a_file_name_is_text(tmp_path, monkeypatch):
    # Wide enough that no line or cell folds the name (tmp_path's length varies by machine)
    monkeypatch.setenv("COLUMNS", "1000")
    part = _copy_into(tmp_path / "t[red]x[bold]-0")
    for argv in (("verify", "--format", "table"), ("dump", "--format", "table"), ("info", "--format", "table"),
                 ("dump", "--records", "--format", "table")):
        r = run_kdump(*argv, part)
        assert r.code == 0, (argv, r.err)
        # (markup would have eaten "[red]" and "[bold]")
        assert "t[red]x[bold]-0" in r.out and "tx-0" not in r.out, (argv, r.out[:400])


# -- records that do not decode: an offset is named only when the CRC vouches for it ------------

def _bad_records_segment(tmp_path, name: str, valid_crc: bool, codec: int = NONE):
    """Two batches of 3 records (offsets 0..2, 3..5); the second one's records section broken."""
    from kdump.format.crc import crc32c

    recs = [(i, NOW + i, b"k", b"v%d" % i) for i in range(3)]
    first = build.build_v2_batch(recs, base_offset=0)
    second = bytearray(build.build_v2_batch(recs, base_offset=3, codec=codec))
    if codec == NONE:
        second[61] = 2                              # the first record's length: 1, below the minimum
    else:
        second[61:] = b"\xff" * (len(second) - 61)  # not gzip at all
    if valid_crc:
        second[17:21] = crc32c(bytes(second[21:])).to_bytes(4, "big")
    return write_segment(tmp_path / name, [first, bytes(second)]), len(first)


@pytest.mark.parametrize("json_flag", [False, True], ids=["text", "json"])
def test_a_record_error_in_a_batch_whose_crc_fails_names_the_offset_as_claimed(tmp_path, json_flag):
    seg, pos = _bad_records_segment(tmp_path, "t-0", valid_crc=False)
    r = run_kdump("dump", "--records", *(["--json"] if json_flag else []), seg)
    assert r.code == 1
    assert r.err.splitlines()[-1] == (f"kdump: error: {seg}:{pos}: Invalid record size 1 in record 0 of batch at "
                                      f"claimed offset 3 (its CRC fails)")
    assert "batch at offset 3" not in r.err


def test_a_record_error_in_a_batch_whose_crc_holds_names_its_offset(tmp_path):
    seg, pos = _bad_records_segment(tmp_path, "t-0", valid_crc=True)
    r = run_kdump("dump", "--records", seg)
    assert r.code == 1
    assert r.err == f"kdump: error: {seg}:{pos}: Invalid record size 1 in record 0 of batch at offset 3\n"


@pytest.mark.parametrize("valid_crc, named", [(True, "batch at offset 3"),
                                              (False, "batch at claimed offset 3 (its CRC fails)")])
def test_a_payload_that_does_not_decompress_names_the_batch_the_same_way(tmp_path, valid_crc, named):
    seg, pos = _bad_records_segment(tmp_path, "t-0", valid_crc=valid_crc, codec=GZIP)
    r = run_kdump("dump", "--records", seg)
    assert r.code == 1
    last = r.err.splitlines()[-1]
    assert last.startswith(f"kdump: error: {seg}:{pos}: {named}: gzip payload does not decompress"), last


@pytest.mark.parametrize("valid_crc, named", [(True, "message at offset 5"),
                                              (False, "message at claimed offset 5 (its CRC fails)")])
def test_a_legacy_wrapper_that_does_not_decompress_names_its_offset_only_when_its_crc_holds(tmp_path, valid_crc, named):
    import zlib

    inner = [build.build_legacy_message(o, b"k", b"v%d" % o, magic=1, timestamp=NOW) for o in range(3, 6)]
    wrapper = bytearray(build.build_legacy_wrapper(inner, magic=1, codec=GZIP, wrapper_offset=5))
    wrapper[-8:] = b"\xff" * 8                      # the gzip trailer: the payload does not decompress
    if valid_crc:
        wrapper[12:16] = zlib.crc32(bytes(wrapper[16:])).to_bytes(4, "big")
    seg = write_segment(tmp_path / "t-0", [bytes(wrapper)], base_offset=3)
    r = run_kdump("dump", "--records", seg)
    assert r.code == 1
    last = r.err.splitlines()[-1]
    assert last.startswith(f"kdump: error: {seg}:0: {named}: gzip payload does not decompress"), last
