"""kafka-dump-log.sh's command line on ``kdump dump``: Kafka's options with Kafka's meaning.

Exact output and exit codes; tests/kafka/test_dls_parity.py diffs the same options against
Kafka's own tool on every fixture.
"""

from __future__ import annotations

import os
import shutil
import struct

import pytest

from support.run import GENERATED, REAL, run_kdump, write_segment

COMPACTED = GENERATED / "compacted-0" / "00000000000000000000"
GZIP = GENERATED / "gzip-v2-0"


def test_files_comma_separated_and_non_consecutive_report(tmp_path):
    # The compacted segment has gaps; DumpLogSegments reports each after all files, on stderr.
    r = run_kdump("dump", "--files", f"{COMPACTED}.log,{COMPACTED}.index", "--deep-iteration")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0] == f"Dumping {COMPACTED}.log"
    assert lines[1] == "Log starting offset: 0"
    assert lines[3] == "| offset: 0 CreateTime: 1700000000000 keySize: 5 valueSize: 69 sequence: 0 headerKeys: []"
    assert lines[-2:] == [f"Dumping {COMPACTED}.index", f"{COMPACTED}.index is empty."]
    assert r.err.splitlines() == [f"Non-consecutive offsets in {COMPACTED}.log", "  0 is followed by 2",
                                  "  2 is followed by 5", "  5 is followed by 15", "  15 is followed by 20",
                                  "  20 is followed by 23", "  24 is followed by 27"]


def test_non_consecutive_report_names_the_absolute_path_like_kafka(monkeypatch):
    monkeypatch.chdir(GENERATED)
    r = run_kdump("dump", "--files", "compacted-0/00000000000000000000.log", "--deep-iteration")
    assert r.err.splitlines()[0] == f"Non-consecutive offsets in {GENERATED}/compacted-0/00000000000000000000.log"
    # A segment whose first record is not offset 0 is reported as Kafka does (-1 is followed by ...).
    r = run_kdump("dump", "--files", "gzip-v2-0/00000000000000000012.log", "--deep-iteration")
    assert r.code == 0
    assert r.err.splitlines() == [f"Non-consecutive offsets in {GENERATED}/gzip-v2-0/00000000000000000012.log",
                                  "  -1 is followed by 12"]


def test_files_picks_no_decoder_from_the_topic_name():
    seg = REAL / "William0423__kafka" / "kafka-logs" / "__consumer_offsets-28" / "00000000000000000000.log"
    head = "| offset: 0 CreateTime: 1534299389611 keySize: 24 valueSize: 227 sequence: -1 headerKeys: [] key: "
    by_files = run_kdump("dump", "--files", str(seg), "--print-data-log", "--max-bytes", "2000")
    by_path = run_kdump("dump", "--format", "text", str(seg), "--print-data-log", "--max-bytes", "2000")
    assert by_files.out.splitlines()[3].startswith(head + "\\x00\\x02\\x00\\x14debug-consumer-group payload: ")
    # PATHS: the partition directory's name picks the __consumer_offsets decoder.
    assert by_path.out.splitlines()[3].startswith(head + '{"type":"2","data":{"group":"debug-consumer-group"}} ')


def test_max_bytes_cutting_a_batch_stops_silently():
    # The README's own example: 2000 bytes end inside a batch; Kafka stops there without a word.
    r = run_kdump("dump", "--format", "text", REAL / "William0423__kafka" / "kafka-logs" / "__consumer_offsets-28",
                  "--data", "--max-bytes", "2000")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines()[-1].startswith("| offset: 12 CreateTime: 1534299401717 keySize: 41 valueSize: 20 ")


def test_decoder_classes_are_kafkas_builtins():
    seg = GENERATED / "headers-0" / "00000000000000000000.log"
    r = run_kdump("dump", "--files", str(seg), "--key-decoder-class", "org.apache.kafka.tools.api.LongDecoder")
    assert r.code == 0
    first = [x for x in r.out.splitlines() if x.startswith("| offset: 0 ")][0]
    # LongDecoder on a 2-byte key: Kafka throws BufferUnderflowException; kdump says so in the line.
    assert first == ("| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 "
                     "headerKeys: [trace-id,nullable] key: <decode failed: long decoder needs 8 bytes, got 2> "
                     "payload: v0")
    same = run_kdump("dump", "--format", "text", str(seg), "--key-decoder", "long")
    assert same.out == r.out
    r = run_kdump("dump", "--files", str(seg), "--value-decoder-class", "StringDecoder")
    assert r.code == 0 and "payload: v0" in r.out
    r = run_kdump("dump", "--files", str(seg), "--value-decoder-class", "com.example.MyDecoder")
    assert r.code == 2
    assert "'com.example.MyDecoder': kdump runs no Java" in r.err


def test_kafka_serializer_decoder_classes_are_the_3x_lines():
    """kafka.serializer's decoders: up to 3.9 (from 3.8 with DumpLogSegments' deprecation line
    after each segment's Dumping line, the value's class first); refused from 4.0, where Kafka
    removed them; DefaultDecoder refused on every line."""
    seg = GENERATED / "headers-0" / "00000000000000000000.log"
    args = ("dump", "--files", str(seg), "--key-decoder-class", "kafka.serializer.StringDecoder",
            "--value-decoder-class", "kafka.serializer.IntegerDecoder")
    r = run_kdump(*args, "--kafka-version", "3.9")
    assert r.code == 0, r.err
    assert r.out.splitlines()[:4] == [
        f"Dumping {seg}",
        "kafka.serializer.IntegerDecoder is deprecated. Please use org.apache.kafka.tools.api.IntegerDecoder instead",
        "kafka.serializer.StringDecoder is deprecated. Please use org.apache.kafka.tools.api.StringDecoder instead",
        "Log starting offset: 0"]
    r37 = run_kdump(*args, "--kafka-version", "3.7")
    assert r37.out.splitlines()[1] == "Log starting offset: 0"
    assert r37.out.splitlines()[1:] == r.out.splitlines()[3:]
    r = run_kdump(*args)
    assert (r.code, r.err) == (2, "kdump: error: --key-decoder-class kafka.serializer.StringDecoder: Kafka 4.4's "
                                  "kafka-dump-log.sh has none (removed in 4.0: KAFKA-14705 (apache/kafka#17420: "
                                  "KIP-1047's deprecated classes removed)); org.apache.kafka.tools.api.StringDecoder "
                                  "is its successor\nkdump: hint: try 'kdump dump --help'\n")
    for name in ("kafka.serializer.DefaultDecoder", "org.apache.kafka.tools.api.DefaultDecoder"):
        r = run_kdump("dump", "--files", str(seg), "--value-decoder-class", name, "--kafka-version", "3.9")
        assert r.code == 2 and f"'{name}': kafka-dump-log.sh prints a Java byte array's identity" in r.err, r.err


def test_long_decoder_reads_the_first_eight_bytes_like_kafka():
    from kdump.decoders import plain

    assert plain.long_(bytes(range(1, 11))) == 0x0102030405060708
    assert plain.int_(b"\x00\x00\x01\x00\xff") == 256


def test_index_sanity_check_and_verify_only():
    mixed = GENERATED / "mixed-codecs-v2-0"
    idx, tix = mixed / "00000000000000000000.index", mixed / "00000000000000000000.timeindex"
    r = run_kdump("dump", "--files", f"{idx},{tix}", "--index-sanity-check")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines() == [f"Dumping {idx}", f"{idx} passed sanity check.",
                                  f"Dumping {tix}", f"{tix} passed sanity check."]
    r = run_kdump("dump", "--files", f"{idx},{tix}", "--verify-index-only")
    assert (r.code, r.out.splitlines(), r.err) == (0, [f"Dumping {idx}", f"Dumping {tix}"], "")
    r = run_kdump("dump", "--json", "--files", str(idx), "--verify-index-only")
    assert r.code == 2 and "kdump index --verify" in r.err


def _segment_copy(tmp_path):
    d = tmp_path / "gzip-v2-0"
    d.mkdir()
    shutil.copy(GZIP / "00000000000000000000.log", d)
    return d / "00000000000000000000"


def test_index_mismatches_reported_as_kafka_does(tmp_path):
    seg = _segment_copy(tmp_path)
    # Two entries: offset 7 at position 0 (that batch ends at 2), and offset 2 at 0 (right).
    (seg.parent / (seg.name + ".index")).write_bytes(struct.pack(">iiii", 2, 0, 7, 0))
    r = run_kdump("dump", "--files", f"{seg}.index")
    assert r.code == 1
    assert r.out.splitlines() == [f"Dumping {seg}.index", "offset: 2 position: 0", "offset: 7 position: 0"]
    assert r.err.splitlines() == [f"Mismatches in :{seg}.index", "  Index offset: 7, log offset: 2"]


def test_time_index_faults_reported_as_kafka_does(tmp_path):
    seg = _segment_copy(tmp_path)
    # offset 2 with a wrong timestamp; offset 5 is inside a batch (not its last offset).
    (seg.parent / (seg.name + ".timeindex")).write_bytes(struct.pack(">qi", 5, 2) + struct.pack(">qi", 4, 5))
    r = run_kdump("dump", "--files", f"{seg}.timeindex", "--verify-index-only")
    assert r.code == 1
    assert r.out.splitlines() == [f"Dumping {seg}.timeindex"]
    assert r.err.splitlines() == [f"Found timestamp mismatch in :{seg}.timeindex",
                                  "  Index timestamp: 5, log timestamp: 1700000000014",
                                  f"The following indexed offsets are not found in :{seg}.timeindex",
                                  "Indexed offset: 5, found log offset: 7"]


def test_index_without_its_segment_is_an_error_not_a_crash(tmp_path):
    idx = tmp_path / "00000000000000000000.index"
    shutil.copy(GZIP / "00000000000000000000.index", idx)
    r = run_kdump("dump", "--files", str(idx))
    assert r.code == 3
    assert r.out.splitlines() == [f"Dumping {idx}"]
    assert r.err == f"kdump: error: {tmp_path}/00000000000000000000.log: its segment is missing\n"
    assert not os.path.exists(tmp_path / "00000000000000000000.log")


def test_no_file_named_is_a_usage_error():
    r = run_kdump("dump", "--deep-iteration")
    assert r.code == 2
    assert "name at least one file or directory (PATHS or --files)" in r.err


def test_escape_none_prints_keys_and_values_as_kafka_does(tmp_path):
    from kdump import encode as build

    seg = write_segment(tmp_path / "t-0", [build.build_v2_batch([(0, 1_700_000_000_000, b"k\t1", b"a\nb\x01\xff")])])
    head = "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: []"
    escaped = run_kdump("dump", "--files", str(seg), "--print-data-log")
    raw = run_kdump("dump", "--files", str(seg), "--print-data-log", "--escape", "none")
    assert escaped.out.splitlines()[3] == head + " key: k\\t1 payload: a\\nb\\x01\ufffd"
    assert raw.out.split("\n")[3:5] == [head + " key: k\t1 payload: a", "b\x01\ufffd"]
    assert escaped.code == raw.code == 0
    r = run_kdump("dump", "--json", "--escape", "none", str(seg))
    assert r.code == 2 and "--escape none is for the text view" in r.err


@pytest.mark.parametrize("accelerated", [True, False])
def test_data_text_escapes_c1_controls_and_line_separators(tmp_path, accelerated):
    """A CSI (U+009B drives a terminal as ESC [ does) and U+2028 in a key or value are shown
    escaped as in every other line for people (words.CONTROL_ESCAPES), with or without C."""
    from kdump import _accel
    from kdump import encode as build

    value = "a\u009b31mb\u2028c\u2029d\u0085".encode()
    seg = write_segment(tmp_path / "t-0", [build.build_v2_batch([(0, 1_700_000_000_000, "k\u009b".encode(), value)])])
    with _accel.using(accelerated):
        r = run_kdump("dump", "--data", "--format", "text", str(seg))
    assert r.code == 0, r.err
    line = next(line for line in r.out.splitlines() if "payload:" in line)
    assert line.endswith(" key: k\\x9b payload: a\\x9b31mb\\u2028c\\u2029d\\x85"), line
    assert not any(ch in r.out for ch in "\u009b\u2028\u2029\u0085")


TXN_STATE = GENERATED.parent / "broker" / "all-shapes" / "__transaction_state-0" / "00000000000000000000.log"


@pytest.mark.parametrize("line, status", [("4.4", '"transactionStatus":"Empty"'), ("4.3", '"transactionStatus":0')])
def test_kafka_version_prints_that_lines_text(line, status):
    argv = ("dump", "--files", str(TXN_STATE), "--deep-iteration", "--print-data-log", "--transaction-log-decoder",
            "--escape", "none")
    r = run_kdump(*argv, "--kafka-version", line)
    assert r.code == 0, r.err
    record = r.out.splitlines()[3]
    assert record.startswith('| offset: 0 CreateTime: 1795485361474 keySize: 17 valueSize: 45 sequence: -1 '
                             'headerKeys: [] key: {"type":"0","data":{"transactionalId":"java-txn-none"}} '
                             'payload: {"version":"1","data":{"producerId":19,"previousProducerId":19,'
                             '"producerEpoch":0,"transactionTimeoutMs":60000,' + status + ',')
    if line == "4.4":
        assert run_kdump(*argv).out == r.out          # the newest line is the default


def test_kafka_version_names_the_lines_it_knows():
    r = run_kdump("dump", "--kafka-version", "3.5", "--files", str(TXN_STATE))
    assert r.code == 2 and "'3.5' is not one of '3.6', '3.7', '3.8', '3.9', '4.0', '4.1', '4.2', '4.3', '4.4'" in r.err
    assert "--kafka-version [3.6|3.7|3.8|3.9|4.0|4.1|4.2|4.3|4.4]" in run_kdump("dump", "--help").out


def test_kafka_version_prints_the_scala_transaction_log_text():
    r = run_kdump("dump", "--files", str(TXN_STATE), "--transaction-log-decoder", "--escape", "none",
                  "--kafka-version", "4.0")
    assert r.code == 0, r.err
    assert r.out.splitlines()[3].endswith(
        " key: transaction_metadata::transactionalId=java-txn-none payload: producerId:19,producerEpoch:0,"
        "state=Empty,partitions=[],txnLastUpdateTimestamp=1795485361471,txnTimeoutMs=60000")


def test_kafka_version_refuses_what_the_line_lacks_and_json():
    r = run_kdump("dump", "--files", str(TXN_STATE), "--share-group-state-decoder", "--kafka-version", "3.9")
    assert r.code == 2
    assert ("kdump: error: --share-group-state-decoder: Kafka 3.9's kafka-dump-log.sh has none (it came in 4.0: "
            "KIP-932 (KAFKA-17633, apache/kafka#17467))") in r.err
    r = run_kdump("dump", "--files", str(TXN_STATE), "--json", "--kafka-version", "4.4")
    assert r.code == 2 and "--kafka-version is for the text view" in r.err
