"""Offset, time and transaction indexes, and the broker's index-building rule (build_indexes).

The real files are under fixtures/real (see PROVENANCE.md there); the malformed ones
are built here by hand.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from kdump.check.broker_rule import build_indexes
from kdump.check.indexes.forward_pass import verify_time_index
from kdump.encode import build_legacy_message, build_v2_batch
from kdump.errors import InvalidFileError, KdumpError, UsageError
from kdump.format.index import encode_index, parse_index, sanity_check_index
from kdump.format.index_encode import max_timestamp_record_offset
from kdump.format.timeindex import encode_timeindex, parse_timeindex, sanity_check_timeindex
from kdump.format.txnindex import encode_txnindex, kafka_version, parse_txnindex, sanity_check_txnindex, version_errors
from kdump.model import AbortedTxn, IndexEntry, TimeIndexEntry

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "fixtures" / "real"
PINTEREST = REAL / "pinterest__tiered-storage"


def _base(path: Path) -> int:
    return int(path.name[:20])


def _real(pattern: str) -> list[Path]:
    return sorted(p for p in REAL.rglob(pattern) if p.is_file())


REAL_INDEXES = _real("*.index") + _real("*.index.swap")
REAL_TIMEINDEXES = _real("*.timeindex") + _real("*.timeindex.cleaned")


def _id(p: Path) -> str:
    return str(p.relative_to(REAL))


# -- .index -------------------------------------------------------------------------------------

def test_real_index_files_found():
    assert len(REAL_INDEXES) >= 200 and len(REAL_TIMEINDEXES) >= 200


@pytest.mark.parametrize("path", REAL_INDEXES, ids=_id)
def test_real_index_parses_and_round_trips(path):
    data = path.read_bytes()
    base = _base(path)
    idx = parse_index(data, base)
    # Every real file is trimmed (rolled, or closed cleanly): no zero tail, no torn slot.
    assert idx.partial_bytes == 0 and idx.zero_tail_start is None and idx.nonzero_after_tail is None
    assert len(idx.entries) == idx.slots == len(data) // 8
    offsets = [e.offset for e in idx.entries]
    positions = [e.position for e in idx.entries]
    assert offsets == sorted(set(offsets)) and all(o > base or len(offsets) == 1 for o in offsets)
    assert positions == sorted(set(positions)) and all(p > 0 for p in positions)
    assert idx.sanity_check(str(path)) == []
    assert encode_index(idx.entries, base) == data


def test_index_zero_tail_of_preallocated_file():
    entries = [IndexEntry(105, 4200), IndexEntry(130, 8400)]
    data = encode_index(entries, 100) + bytes(8 * 1000)
    idx = parse_index(data, 100)
    assert idx.entries == entries
    assert idx.zero_tail_start == 2 and idx.nonzero_after_tail is None and idx.slots == 1002
    # Kafka's lastOffset is the last slot (= base for a zero tail), so the check passes.
    assert idx.last_slot == (0, 0)
    assert idx.sanity_check("/d/t-0/00000000000000000100.index") == []


def test_index_non_zero_slot_after_zero_tail_is_reported():
    data = encode_index([IndexEntry(5, 100)], 0) + bytes(16) + encode_index([IndexEntry(9, 300)], 0) + bytes(8)
    idx = parse_index(data, 0)
    assert idx.entries == [IndexEntry(5, 100)]
    assert idx.zero_tail_start == 1 and idx.nonzero_after_tail == 3


def test_index_all_zero_file_keeps_slot_zero_as_kafka_does():
    idx = parse_index(bytes(80), 7)
    assert idx.entries == [IndexEntry(7, 0)] and idx.zero_tail_start == 1
    assert parse_index(bytes(8), 7).zero_tail_start is None
    empty = parse_index(b"", 7)
    assert empty.entries == [] and empty.last_slot is None and empty.sanity_check("f") == []


def test_index_slot_with_zero_relative_offset_but_a_position_is_an_entry():
    data = encode_index([IndexEntry(0, 50)], 0) + struct.pack(">ii", 0, 90)
    assert parse_index(data, 0).entries == [IndexEntry(0, 50), IndexEntry(0, 90)]


def test_index_partial_slot_and_sanity_message():
    data = encode_index([IndexEntry(3, 10)], 0) + b"\x00\x01\x02"
    idx = parse_index(data, 0)
    assert idx.partial_bytes == 3 and idx.entries == [IndexEntry(3, 10)] and idx.size == 11
    assert idx.sanity_check("/x/00000000000000000000.index") == [
        "Index file /x/00000000000000000000.index is corrupt, found 11 bytes which is neither positive "
        "nor a multiple of 8"]


def test_index_sanity_last_offset_below_base():
    data = struct.pack(">ii", 4, 100) + struct.pack(">ii", -3, 200)
    idx = parse_index(data, 50)
    assert idx.entries[-1] == IndexEntry(47, 200)
    assert idx.sanity_check("/x/a.index") == [
        "Corrupt index found, index file /x/a.index has non-zero size but the last offset is 47 which is "
        "less than the base offset 50"]
    assert idx.sanity_check("/x/a.index", wording="scala")[0].startswith(
        "Corrupt index found, index file (/x/a.index) has non-zero size")
    # Both conditions at once: Kafka throws the first, kdump lists both in Kafka's order.
    both = sanity_check_index(21, -1, 50, "f")
    assert len(both) == 2 and both[0].startswith("Corrupt index found") and "found 21 bytes" in both[1]
    assert sanity_check_index(0, None, 50, "f") == []


@pytest.mark.parametrize("offset", [99, 100 + 2**31, -5])
def test_encode_index_rejects_relative_offset_out_of_range(offset):
    with pytest.raises(InvalidFileError) as e:
        encode_index([IndexEntry(110, 0), IndexEntry(offset, 8)], 100)
    assert e.value.position == 8 and e.value.offset == offset


def test_encode_index_bounds():
    assert parse_index(encode_index([(100 + 2**31 - 1, 2**31 - 1)], 100), 100).entries == [
        IndexEntry(100 + 2**31 - 1, 2**31 - 1)]
    with pytest.raises(InvalidFileError):
        encode_index([(101, -1)], 100)
    with pytest.raises(InvalidFileError):
        encode_index([(101, 2**31)], 100)


# -- .timeindex ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", REAL_TIMEINDEXES, ids=_id)
def test_real_timeindex_parses_and_round_trips(path):
    data = path.read_bytes()
    base = _base(path)
    tix = parse_timeindex(data, base)
    assert tix.partial_bytes == 0 and tix.zero_tail_start is None
    assert len(tix.entries) == len(data) // 12
    stamps = [e.timestamp for e in tix.entries]
    offsets = [e.offset for e in tix.entries]
    assert stamps == sorted(set(stamps)) and offsets == sorted(offsets) and all(o >= base for o in offsets)
    assert tix.sanity_check(str(path)) == []
    assert encode_timeindex(tix.entries, base) == data


def test_timeindex_zero_tail_and_kafka_false_positive():
    entries = [TimeIndexEntry(1_700_000_000_000, 12), TimeIndexEntry(1_700_000_000_500, 40)]
    data = encode_timeindex(entries, 10) + bytes(12 * 50)
    tix = parse_timeindex(data, 10)
    assert tix.entries == entries and tix.zero_tail_start == 2 and tix.nonzero_after_tail is None
    # TimeIndex.sanityCheck reads the last *slot*: timestamp 0 < first timestamp. Known false positive.
    assert tix.sanity_check("/d/00000000000000000010.timeindex") == [
        "Corrupt time index found, time index file (/d/00000000000000000010.timeindex) has non-zero size but "
        "the last timestamp is 0 which is less than the first timestamp 1700000000000"]
    assert parse_timeindex(encode_timeindex(entries, 10), 10).sanity_check("f") == []


def test_timeindex_sanity_messages():
    assert sanity_check_timeindex(24, 500, 600, -2, 10, "/t.timeindex") == [
        "Corrupt time index found, time index file (/t.timeindex) has non-zero size but the last offset is 8 "
        "which is less than the first offset 10"]
    assert sanity_check_timeindex(25, 500, 600, 0, 10, "/t.timeindex") == [
        "Time index file /t.timeindex is corrupt, found 25 bytes which is neither positive nor a multiple of 12"]
    assert sanity_check_timeindex(25, 500, 600, 0, 10, "/t.timeindex", wording="scala")[0].endswith("of 12.")
    assert sanity_check_timeindex(0, None, None, None, 10, "f") == []
    assert len(sanity_check_timeindex(36, 500, 400, -1, 10, "f")) == 2


def test_timeindex_partial_and_nonzero_after_tail():
    data = (encode_timeindex([(5, 1)], 0) + bytes(12) + encode_timeindex([(9, 2)], 0) + b"\x01\x02")
    tix = parse_timeindex(data, 0)
    assert tix.entries == [TimeIndexEntry(5, 1)]
    assert (tix.zero_tail_start, tix.nonzero_after_tail, tix.partial_bytes) == (1, 2, 2)


def test_encode_timeindex_rejects_bad_values():
    with pytest.raises(InvalidFileError) as e:
        encode_timeindex([(1, 5), (2, 3)], 4)
    assert e.value.position == 12
    with pytest.raises(InvalidFileError):
        encode_timeindex([(2**63, 5)], 0)
    with pytest.raises(InvalidFileError):
        encode_timeindex([(1, 2**31)], 0)


# -- .txnindex ----------------------------------------------------------------------------------

TXNS = [AbortedTxn(0, 4001, 100, 120, 95), AbortedTxn(0, 4002, 110, 140, 100)]


def test_txnindex_round_trip_and_partial_entry():
    data = encode_txnindex(TXNS)
    assert len(data) == 68
    assert parse_txnindex(data) == (TXNS, 0, 68)
    torn = parse_txnindex(data + data[:20])
    assert torn.entries == TXNS and torn.partial_bytes == 20
    assert parse_txnindex(b"").entries == []


def test_txnindex_one_byte_version_quirk():
    entries = parse_txnindex(encode_txnindex([AbortedTxn(v, 1, 2, 3, 4) for v in (0, 1, 255, 256, 0x7F00, -1)]))
    assert [t.version for t in entries.entries] == [0, 1, 255, 256, 0x7F00, -1]
    # Kafka reads the high byte only: versions below 256 look like 0 to the broker.
    assert [kafka_version(t) for t in entries.entries] == [0, 0, 0, 1, 127, -1]
    assert version_errors(entries.entries, "/p/0.txnindex") == [
        "Unexpected aborted transaction version 1 in transaction index /p/0.txnindex, current version is 0",
        "Unexpected aborted transaction version 127 in transaction index /p/0.txnindex, current version is 0"]


def test_txnindex_sanity_message():
    assert sanity_check_txnindex(TXNS, 100, "f") == []
    assert sanity_check_txnindex(TXNS, 130, "/p/00000000000000000130.txnindex") == [
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=4001, firstOffset=100, "
        "lastOffset=120, lastStableOffset=95) in index /p/00000000000000000130.txnindex is less than start "
        "offset 130"]


def test_encode_txnindex_rejects_overflow():
    with pytest.raises(InvalidFileError):
        encode_txnindex([AbortedTxn(0, 2**63, 0, 0, 0)])


# -- fuzz: mutated real index bytes never raise --------------------------------------------------

def test_mutated_index_bytes_never_raise():
    rng = random.Random(1234)
    samples = [p.read_bytes() for p in REAL_INDEXES[:20] + REAL_TIMEINDEXES[:20]]
    for data in samples:
        for _ in range(20):
            buf = bytearray(data[:rng.randrange(len(data) + 1)])
            for _ in range(rng.randrange(4)):
                if buf:
                    buf[rng.randrange(len(buf))] = rng.randrange(256)
            parse_index(bytes(buf), 0).sanity_check("f")
            parse_timeindex(bytes(buf), 0).sanity_check("f")
            parse_txnindex(bytes(buf))


# -- build_indexes: the LogSegment.recover rule ---------------------------------------------------

def _segment(batches: list[bytes]) -> bytes:
    return b"".join(batches)


def _v2(base: int, stamps: list[int], pad: int = 0) -> bytes:
    value = b"v" * pad
    return build_v2_batch([(i, ts, None, value) for i, ts in enumerate(stamps)], base_offset=base)


def test_build_indexes_interval_rule():
    # Six 3-record batches of ~1.1 KB: an entry once more than 2000 bytes went by since the last.
    batches = [_v2(3 * i, [1000 + 10 * i, 1005 + 10 * i, 1001 + 10 * i], pad=330) for i in range(6)]
    buf = _segment(batches)
    size = len(batches[0])
    offsets, times, valid = build_indexes(buf, 0, interval_bytes=2000)
    assert valid == len(buf)
    # The first batch never gets an entry; then every batch starting > 2000 bytes after the last entry.
    expected_positions = []
    last = 0
    for i in range(6):
        if i * size - last > 2000:
            expected_positions.append(i * size)
            last = i * size
    assert [e.position for e in offsets] == expected_positions
    assert [e.offset for e in offsets] == [p // size * 3 + 2 for p in expected_positions]
    # Time entries at the same points plus the final (max timestamp) one; "last" pairs the batch's last offset.
    assert times[-1] == TimeIndexEntry(1055, 17)
    _, times_rec, _ = build_indexes(buf, 0, interval_bytes=2000, time_offset="record")
    assert times_rec[-1] == TimeIndexEntry(1055, 16)        # the record carrying the max timestamp
    assert [t.timestamp for t in times] == [t.timestamp for t in times_rec]


def test_build_indexes_stops_at_bad_crc_and_torn_tail():
    batches = [_v2(i, [100 + i], pad=3000) for i in range(4)]
    bad = bytearray(batches[2])
    bad[-1] ^= 0xFF
    buf = _segment([batches[0], batches[1], bytes(bad), batches[3]])
    offsets, times, valid = build_indexes(buf, 0, interval_bytes=1000)
    assert valid == len(batches[0]) + len(batches[1])
    assert offsets == [IndexEntry(1, len(batches[0]))]
    assert times == [TimeIndexEntry(101, 1)]
    torn = _segment(batches[:3]) + batches[3][:40]
    assert build_indexes(torn, 0, interval_bytes=1000)[2] == sum(len(b) for b in batches[:3])


def test_build_indexes_time_entry_only_when_timestamp_grows():
    batches = [_v2(i, [500], pad=200) for i in range(5)] + [_v2(5, [400], pad=200)]
    offsets, times, _ = build_indexes(_segment(batches), 0, interval_bytes=100)
    assert [e.offset for e in offsets] == [1, 2, 3, 4, 5]
    assert times == [TimeIndexEntry(500, 0)]


def test_build_indexes_v0_segment_has_no_time_index():
    msgs = [build_legacy_message(i, None, b"x" * 300, magic=0) for i in range(30)]
    offsets, times, valid = build_indexes(_segment(msgs), 0, interval_bytes=1000)
    assert times == [] and valid == sum(len(m) for m in msgs) and len(offsets) > 0


def test_build_indexes_offset_overflow_and_bad_convention():
    buf = _v2(5, [1]) + _v2(5 + 2**31, [2])
    with pytest.raises(InvalidFileError) as e:
        build_indexes(buf, 5)
    assert e.value.position == len(_v2(5, [1]))
    with pytest.raises(UsageError):
        build_indexes(b"", 0, time_offset="first")
    assert build_indexes(b"", 0) == ([], [], 0)


def test_build_indexes_on_mutated_logs_raises_only_kdump_errors():
    rng = random.Random(99)
    log = PINTEREST / "ts-consumer/src/test/resources/log-files/test_topic_a-0/00000000000000000000.log"
    data = log.read_bytes()
    for _ in range(60):
        buf = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        for conv in ("last", "record"):
            try:
                build_indexes(bytes(buf), 0, time_offset=conv)
            except KdumpError:
                pass


# Which rolled pinterest segments build_indexes(interval_bytes=4096) reproduces byte for byte.
# Value: (.index matches, .timeindex matches with time_offset="last", ... with "record").
# Every .log of these sets walks cleanly to its end (valid_bytes == file size).
_CONSUMER = "ts-consumer/src/test/resources/log-files/"
REBUILD_BY_DIR = {
    # 3 rolled segments of ~7,600 single-record batches (1 MB): one record per batch, so a
    # batch's last offset IS the record carrying its max timestamp; both conventions agree.
    "ts-common/src/test/resources/log-files/timeindex_test": (True, True, True),
    # 30 rolled segments of 294 single-record batches: same.
    "ts-segment-uploader/src/test/resources/log_segments/test_topic_a-0": (True, True, True),
    # 39 / 35 / 36 rolled segments, multi-record uncompressed CreateTime batches (one 282-record
    # batch per segment after the first). The broker paired each max timestamp with the FIRST
    # RECORD carrying it (the leader append path, LogValidator's offsetOfMaxTimestamp), not the
    # batch's last offset that LogSegment.recover writes: only the "record" convention matches.
    _CONSUMER + "test_topic_a-0": (True, False, True),
    _CONSUMER + "test_topic_a-1": (True, False, True),
    _CONSUMER + "test_topic_a-2": (True, False, True),
}
REBUILD_EXCEPTIONS = {
    # The first segments of a-1 and a-2 (written 2025-05-06; a-0 dates from 2023-11-22) have
    # an index entry for EVERY batch after the first, 232 and 118 bytes apart at the
    # smallest: written with a small index.interval.bytes (any value < 118 reproduces both
    # files, see test_small_interval_reproduces_first_segments), not the default 4096.
    (_CONSUMER + "test_topic_a-1", 0): (False, False, False),
    # In a-2 the extra time-index entries happen to coincide with the 4096 ones.
    (_CONSUMER + "test_topic_a-2", 0): (False, False, True),
}
ROLLED_COUNTS = {"ts-common/src/test/resources/log-files/timeindex_test": 3,
                 "ts-segment-uploader/src/test/resources/log_segments/test_topic_a-0": 30,
                 _CONSUMER + "test_topic_a-0": 39, _CONSUMER + "test_topic_a-1": 35,
                 _CONSUMER + "test_topic_a-2": 36}
# Not covered: log_segments/test_topic_b-0 keeps only the .index/.timeindex of its two rolled
# segments (their .log files were not committed); its one .log is the active segment.


def _rolled_segments():
    out = []
    for rel in REBUILD_BY_DIR:
        logs = sorted((PINTEREST / rel).glob("*.log"))
        out += [(rel, log) for log in logs[:-1]]
    return out


ROLLED = _rolled_segments()


def test_rolled_segment_inventory():
    counts: dict[str, int] = {}
    for rel, _ in ROLLED:
        counts[rel] = counts.get(rel, 0) + 1
    assert counts == ROLLED_COUNTS


@pytest.mark.parametrize("rel,log", ROLLED, ids=lambda x: x.name if isinstance(x, Path) else x.split("/")[-1])
def test_rebuild_matches_broker_indexes(rel, log):
    base = _base(log)
    buf = log.read_bytes()
    index = log.with_suffix(".index").read_bytes()
    timeindex = log.with_suffix(".timeindex").read_bytes()
    offsets, times_last, valid = build_indexes(buf, base, interval_bytes=4096, time_offset="last")
    _, times_record, _ = build_indexes(buf, base, interval_bytes=4096, time_offset="record")
    assert valid == len(buf)
    got = (encode_index(offsets, base) == index, encode_timeindex(times_last, base) == timeindex,
           encode_timeindex(times_record, base) == timeindex)
    assert got == REBUILD_EXCEPTIONS.get((rel, base), REBUILD_BY_DIR[rel])


@pytest.mark.parametrize("part", ["test_topic_a-1", "test_topic_a-2"])
def test_small_interval_reproduces_first_segments(part):
    log = PINTEREST / _CONSUMER / part / "00000000000000000000.log"
    buf = log.read_bytes()
    offsets, times, _ = build_indexes(buf, 0, interval_bytes=100, time_offset="record")
    assert encode_index(offsets, 0) == log.with_suffix(".index").read_bytes()
    assert encode_timeindex(times, 0) == log.with_suffix(".timeindex").read_bytes()


@pytest.mark.parametrize("rel,expected", [
    ("ts-common/src/test/resources/log-files/timeindex_test", "either"),
    ("ts-segment-uploader/src/test/resources/log_segments/test_topic_a-0", "either"),
    (_CONSUMER + "test_topic_a-0", "record"),
    (_CONSUMER + "test_topic_a-1", "record"),
])
def test_time_offset_convention(rel, expected):
    log = sorted((PINTEREST / rel).glob("*.log"))[0]
    buf, base = log.read_bytes(), _base(log)

    def check(entries):
        return verify_time_index(buf, base, parse_timeindex(encode_timeindex(entries, base), base))

    entries = parse_timeindex(log.with_suffix(".timeindex").read_bytes(), base).entries
    assert check(entries).convention == expected
    _, rebuilt, _ = build_indexes(buf, base, time_offset="last")
    assert check(rebuilt).convention in ("last", "either")
    assert not check([TimeIndexEntry(1, base)]).ok     # a timestamp no batch carries


def test_max_timestamp_record_offset_log_append_time_uses_last_offset():
    batch_bytes = build_v2_batch([(0, 10, None, b"a"), (1, 30, None, b"b"), (2, 20, None, b"c")], base_offset=7,
                                 timestamp_type=1, max_timestamp=99)
    create = build_v2_batch([(0, 10, None, b"a"), (1, 30, None, b"b"), (2, 30, None, b"c")], base_offset=7)
    from kdump.format.walk import Walker
    (lat,) = list(Walker(batch_bytes))
    (ct,) = list(Walker(create))
    assert max_timestamp_record_offset(batch_bytes, lat) == 9
    assert max_timestamp_record_offset(create, ct) == 8


def test_small_file_layout_and_entries_equal_the_chunked_walk():
    """A one-chunk file (bytes) is searched in place; a map or reader takes the chunked walk.
    Both give the same layout and entries, over slot files built to hit every edge: zero
    slots anywhere, zero runs across two slots, non-zero bytes after the tail, torn last slots."""
    from kdump.format.index import ENTRY as INDEX_ENTRY
    from kdump.format.index import index_entries, slot_layout
    from kdump.format.timeindex import timeindex_entries

    rnd = random.Random(38)
    for trial in range(3000):
        size = rnd.choice((8, 12))
        slots = []
        for _ in range(rnd.randrange(0, 12)):
            pick = rnd.random()
            slots.append(bytes(size) if pick < 0.3 else
                         bytes(rnd.randrange(size)) + bytes([rnd.randrange(1, 256)]) + bytes(size)
                         if pick < 0.6 else rnd.randbytes(size))
        data = b"".join(s[:size] for s in slots) + rnd.randbytes(rnd.choice((0, 0, 0, 3, size - 1)))
        chunked = memoryview(data)      # (not bytes: the general path)
        assert slot_layout(data, size) == slot_layout(chunked, size), (trial, data)
        if size == INDEX_ENTRY.size:
            assert index_entries(data, 5) == index_entries(bytearray(data), 5)
        else:
            assert timeindex_entries(data, 5) == timeindex_entries(bytearray(data), 5)
