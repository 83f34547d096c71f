"""The scanner's corruption matrix, in-process, on real and generated segments of every magic and codec.

For each damage the scanner must name the right kind of finding at the right position,
and its ``valid_bytes`` must equal what Kafka's ``LogSegment.recover`` keeps, computed
by an independent transcription of the Java code (``support.damage.kafka_recover``).
"""

from __future__ import annotations

import struct

import pytest

from kdump.check.broker_rule import build_indexes  # noqa: E402
from kdump.check.scan import TAIL_KINDS, scan_file, scan_segment  # noqa: E402
from kdump.encode import build_legacy_message, build_v2_batch  # noqa: E402
from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET  # noqa: E402
from kdump.format.crc import crc32, crc32c  # noqa: E402
from kdump.storage.names import filename_offset  # noqa: E402
from support.damage import (  # noqa: E402
    FIXTURES,
    LEGACY_FIELDS,
    V2_CRC_COVERED,
    V2_FIELDS,
    batches,
    flip_bit,
    garbage,
    kafka_recover,
    set_base_offset,
    set_length,
    write_at,
)

SEGMENTS = {
    "real-v2-none-gzip": "real/BiggerBrain__kafka/data/lsx1-0/00000000000000000000.log",
    "real-v2-lz4": "real/mscaldas2012__kafka-connect-spooldir/kafka-data/"
                   "_confluent-controlcenter-5-1-2-1-actual-group-consumption-rekey-0/00000000000000000000.log",
    "real-v2-snappy": "real/seanorth__kafka-server/kafka-logs/some-topic-0/00000000000000000000.log",
    "real-v2-gzip-24k": "real/LanXuage__dspider/data/kafka/data/dspiderTask-1/00000000000000000000.log",
    "real-v0-gzip": "real/asayers__kafkalite/tests/test-data/fs-data/hamlet-gzip-0/00000000000000000000.log",
    "real-v0-snappy": "real/asayers__kafkalite/tests/test-data/fs-data/hamlet-snappy-0/00000000000000000000.log",
    "real-v0-none": "real/asayers__kafkalite/tests/test-data/fs-data/hamlet-none-0/00000000000000000000.log",
    "gen-v2-zstd": "generated/zstd-v2-0/00000000000000000012.log",
    "gen-v2-snappy-raw": "generated/snappy-raw-v2-0/00000000000000000000.log",
    "gen-v2-mixed": "generated/mixed-codecs-v2-0/00000000000000000000.log",
    "gen-v2-txn": "generated/transactions-0/00000000000000000000.log",
    "gen-v2-compacted": "generated/compacted-0/00000000000000000000.log",
    "gen-v2-log-append": "generated/log-append-time-0/00000000000000000000.log",
    "gen-v1-gzip": "generated/gzip-v1-0/00000000000000000000.log",
    "gen-v1-snappy": "generated/snappy-v1-0/00000000000000000000.log",
    "gen-v1-lz4": "generated/lz4-v1-0/00000000000000000000.log",
    "gen-v0-lz4": "generated/lz4-v0-0/00000000000000000000.log",
}
IDS = list(SEGMENTS)


TAIL_BATCHES = 3          # big segments are damaged in their last few batches only (speed)


class Seg:
    def __init__(self, name: str) -> None:
        self.path = FIXTURES / SEGMENTS[name]
        self.full = self.path.read_bytes()
        self.data = self.full
        self.base = filename_offset(self.path.name)
        self.batches = batches(self.data)
        if len(self.data) > 64 << 10 and len(self.batches) > TAIL_BATCHES:
            # A segment read from a batch boundary is still a segment: keep its tail.
            first = self.batches[-TAIL_BATCHES]
            self.data = self.data[first.position:]
            self.base = first.base_offset if first.base_offset is not None else first.last_offset
            self.batches = batches(self.data)
        self.last = self.batches[-1]
        self.mid = self.batches[len(self.batches) // 2] if len(self.batches) > 2 else self.batches[0]

    def scan(self, data, **kw):
        return scan_segment(bytes(data), base_offset=self.base, **kw)

    def kafka(self, data) -> int:
        return kafka_recover(bytes(data), self.base)


_SEGS: dict[str, Seg] = {}


def seg(name: str) -> Seg:
    if name not in _SEGS:
        _SEGS[name] = Seg(name)
    return _SEGS[name]


def kinds_at(report, position):
    return {f.kind for f in report.findings if f.position == position}


@pytest.mark.parametrize("name", IDS)
def test_intact_segment_has_no_findings(name):
    s = seg(name)
    r = scan_segment(s.full, base_offset=filename_offset(s.path.name), deep=True)
    assert r.findings == []
    assert r.status == "ok"
    assert r.valid_bytes == len(s.full) == kafka_recover(s.full, filename_offset(s.path.name))
    assert r.batches == len(batches(s.full))


@pytest.mark.parametrize("name", IDS)
def test_truncation_at_every_byte_of_the_last_batch(name):
    s = seg(name)
    last = s.last
    cuts = range(last.position + 1, last.position + last.size)
    if last.size > 600:        # big compressed wrappers: every header byte, then a stride through the payload
        cuts = sorted(set(range(last.position + 1, last.position + 80)) | set(cuts[::13]) | set(cuts[-20:]))
    for k in cuts:
        r = s.scan(s.data[:k])
        assert r.valid_bytes == last.position == s.kafka(s.data[:k]), k
        assert r.cut is not None and r.cut.kind in TAIL_KINDS and r.cut.position == last.position, (k, r.cut)
        assert r.status == "torn_tail", (k, r.findings)
        assert r.batches == len(s.batches) - 1


def _expected_header_flip(magic: int, field: str, bit: int):
    """(cut at the batch?, kinds acceptable at the batch position)."""
    if magic >= 2:
        if field in V2_CRC_COVERED:
            return True, {"crc_mismatch"}
        if field == "length":
            return True, {"crc_mismatch", "torn_tail", "invalid_size", "oversize"}
        if field == "magic":
            # 2 -> 0 (bit 1) is read as a legacy message and fails its CRC-32; 2 -> 0x82 is
            # negative, also legacy. Any other bit gives 3..127: Kafka reads it as v2, the
            # magic byte is outside the CRC, so the broker keeps the batch.
            if bit in (1, 7):
                return True, {"crc_mismatch", "invalid_magic", "invalid_size"}
            return False, {"invalid_magic"}
        return False, None          # base offset, leader epoch: not covered by the CRC
    if field in ("crc", "magic", "attributes", "length"):
        return True, {"crc_mismatch", "invalid_size", "invalid_magic", "torn_tail", "oversize"}
    return False, None              # the offset is outside the legacy CRC


@pytest.mark.parametrize("name", IDS)
def test_one_flipped_bit_in_each_header_field_and_the_payload(name):
    s = seg(name)
    for b in {s.mid.position: s.mid, s.last.position: s.last}.values():
        fields = V2_FIELDS if b.magic >= 2 else LEGACY_FIELDS
        for field, (off, size) in fields.items():
            for byte, bit in ((off + size - 1, 0), (off + size - 1, 1), (off, 7), (off + size - 1, 4)):
                data = flip_bit(bytearray(s.data), b.position + byte, bit)
                r = s.scan(data)
                assert r.valid_bytes == s.kafka(data), (field, bit)
                cut, kinds = _expected_header_flip(b.magic, field, bit if byte == off + size - 1 else 7)
                if cut:
                    assert r.valid_bytes == b.position, (field, byte, bit)
                    assert r.cut.position == b.position and r.cut.kind in kinds, (field, byte, bit, r.cut)
                elif kinds:
                    assert kinds <= kinds_at(r, b.position), (field, bit, r.findings)
        # The payload: CRC-32C (v2) or CRC-32 (legacy) catches any flipped bit.
        head = 61 if b.magic >= 2 else 18 + 8 * b.magic
        for at in (b.position + b.size - 1, b.position + head + (b.size - head) // 2):
            data = flip_bit(bytearray(s.data), at, 3)
            r = s.scan(data)
            assert r.valid_bytes == b.position == s.kafka(data)
            assert r.cut.kind == "crc_mismatch"


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize("length", [2**31 - 1, 3])
def test_absurd_length_in_the_middle_and_at_the_end(name, length):
    s = seg(name)
    for b in (s.mid, s.last):
        data = set_length(bytearray(s.data), b.position, length)
        r = s.scan(data)
        assert r.valid_bytes == b.position == s.kafka(data)
        assert r.cut.kind == ("oversize" if length > 2**30 else "invalid_size")
        assert r.status == "damaged"
        after = [x for x in s.batches if x.position > b.position]
        if after:
            # The resync finds the batches that follow and says what lies beyond.
            beyond = [f for f in r.findings if f.kind == "intact_beyond"]
            assert beyond and beyond[0].position == after[0].position
            assert r.intact_beyond[0][2] == len(after)


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize("n", [4096, 10, 17, 18])
def test_zero_filled_tail(name, n):
    s = seg(name)
    data = s.data + bytes(n)
    r = s.scan(data)
    assert r.valid_bytes == len(s.data) == s.kafka(data)
    assert r.cut.kind == "zero_tail" and r.cut.position == len(s.data)
    assert r.status == "torn_tail"


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_garbage_appended(name, seed):
    s = seg(name)
    data = s.data + garbage(300, seed)
    r = s.scan(data)
    assert r.valid_bytes == len(s.data) == s.kafka(data)
    assert r.cut.position == len(s.data)
    assert r.status in ("damaged", "torn_tail")


@pytest.mark.parametrize("name", IDS)
def test_duplicated_batch(name):
    s = seg(name)
    last = s.last
    data = s.data + s.data[last.position:last.position + last.size]
    r = s.scan(data)
    assert "offset_regression" in kinds_at(r, len(s.data))
    # The broker keeps a duplicate unless it lands on an index-append point.
    assert r.valid_bytes == s.kafka(data)


@pytest.mark.parametrize("name", IDS)
def test_offsets_going_backwards(name):
    s = seg(name)
    b = s.mid if s.mid.position > 0 else s.last
    if b.position == 0:
        pytest.skip("one batch")
    first = s.batches[0]
    data = set_base_offset(bytearray(s.data), b.position, first.last_offset)
    r = s.scan(data)
    assert kinds_at(r, b.position) & {"offset_regression", "last_offset_delta"}
    assert r.valid_bytes == s.kafka(data)
    assert r.status == "damaged"


# -- compressed payloads that do not decompress --------------------------------------------------

def _break_v2_payload(data: bytearray, b) -> bytearray:
    """Garbage in a compressed v2 payload, with a CRC-32C that matches it again."""
    start, end = b.position + 61, b.position + b.size
    data[start:end] = garbage(end - start, 5)
    struct.pack_into(">I", data, b.position + CRC_OFFSET, crc32c(bytes(data[b.position + ATTRIBUTES_OFFSET:end])))
    return data


def _break_legacy_value(data: bytearray, b) -> bytearray:
    """Garbage in a compressed v0/v1 wrapper's value, with a matching CRC-32."""
    msg = b.position + 12
    pos = msg + 6 + (8 if b.magic == 1 else 0)
    (klen,) = struct.unpack_from(">i", data, pos)
    pos += 4 + max(klen, 0) + 4
    end = b.position + b.size
    data[pos:end] = garbage(end - pos, 5)
    struct.pack_into(">I", data, msg, crc32(bytes(data[msg + 4:end])))
    return data


@pytest.mark.parametrize("name", IDS)
def test_compressed_payload_that_does_not_decompress(name):
    s = seg(name)
    compressed = [b for b in s.batches if b.attributes & 7]
    if not compressed:
        pytest.skip("no compressed batch")
    b = compressed[len(compressed) // 2]
    data = bytearray(s.data)
    data = _break_v2_payload(data, b) if b.magic >= 2 else _break_legacy_value(data, b)
    deep = s.scan(data, deep=True)
    assert "codec" in kinds_at(deep, b.position) or "record_decode" in kinds_at(deep, b.position)
    # The broker checks only the CRC, which matches: nothing is cut.
    assert deep.valid_bytes == len(data) == s.kafka(data)
    shallow = s.scan(data)
    if b.magic >= 2:
        assert shallow.findings == []          # v2 records are not opened without --deep
    else:
        assert "codec" in kinds_at(shallow, b.position)   # legacy wrappers are opened to count them


# -- where Kafka's rule differs from a naive one -------------------------------------------------

T0 = 1700000000000


def _v2(base: int, n: int = 3, size: int = 20, **kw) -> bytes:
    return build_v2_batch([(i, T0 + base + i, None, bytes([65 + i % 26]) * size) for i in range(n)],
                          base_offset=base, **kw)


def _segment(*parts: bytes) -> tuple[bytes, list[int]]:
    positions, pos = [], 0
    for p in parts:
        positions.append(pos)
        pos += len(p)
    return b"".join(parts), positions


def test_torn_tail_versus_corrupt_middle_batch():
    data, pos = _segment(_v2(0), _v2(3), _v2(6), _v2(9))
    torn = data[:-10]
    r = scan_segment(torn, base_offset=0)
    assert (r.cut.kind, r.valid_bytes, r.status) == ("torn_tail", pos[3], "torn_tail")
    corrupt = flip_bit(bytearray(data), pos[1] + 70, 0)
    r = scan_segment(bytes(corrupt), base_offset=0)
    # Kafka stops at the bad batch and drops the two good ones after it; kdump says they exist.
    assert (r.cut.kind, r.valid_bytes, r.status) == ("crc_mismatch", pos[1], "damaged")
    assert r.valid_bytes == kafka_recover(bytes(corrupt), 0)
    assert r.intact_beyond == [(pos[2], len(data), 2, 6, 11)]


def test_length_below_the_v2_minimum_but_above_14():
    # 14 <= length + 12 < 61: FileLogInputStream accepts it, DefaultRecordBatch.ensureValid does not.
    data, pos = _segment(_v2(0), _v2(3), _v2(6))
    bad = set_length(bytearray(data), pos[1], 40)
    r = scan_segment(bytes(bad), base_offset=0)
    assert (r.cut.kind, r.cut.position, r.valid_bytes) == ("invalid_size", pos[1], pos[1])
    assert r.valid_bytes == kafka_recover(bytes(bad), 0)


def test_length_past_the_end_in_the_middle_is_corruption_not_a_torn_tail():
    data, pos = _segment(_v2(0), _v2(3), _v2(6))
    bad = set_length(bytearray(data), pos[1], len(data))      # plausible, but runs past the end
    r = scan_segment(bytes(bad), base_offset=0)
    # Kafka treats it like a torn tail and cuts there; the intact batch after it shows the
    # length is what is broken.
    assert r.valid_bytes == pos[1] == kafka_recover(bytes(bad), 0)
    assert r.cut.kind == "invalid_size" and r.status == "damaged"
    assert r.intact_beyond[0][:3] == (pos[2], len(data), 1)


def test_offset_regression_is_kept_by_the_broker_unless_it_hits_an_index_point():
    # Small segment: no index entry is appended, the broker keeps the regressing batch.
    data, pos = _segment(_v2(0), _v2(3), _v2(1), _v2(6))
    r = scan_segment(data, base_offset=0)
    assert kinds_at(r, pos[2]) == {"offset_regression"}
    assert r.valid_bytes == len(data) == kafka_recover(data, 0)
    assert r.status == "damaged"
    # Larger batches: the regression lands where recovery appends an index entry
    # (InvalidOffsetException) and LogLoader empties the whole segment.
    big = [_v2(10 * i, n=3, size=1500) for i in range(8)]
    big[6] = _v2(12, n=3, size=1500)
    data, pos = _segment(*big)
    r = scan_segment(data, base_offset=0)
    assert r.valid_bytes == 0 == kafka_recover(data, 0)
    assert r.cut.kind == "invalid_offset" and r.cut.position == 0
    assert "offset_regression" in kinds_at(r, pos[6])
    assert r.intact_beyond and r.intact_beyond[0][0] == 0


def test_magic_above_2_with_a_valid_crc_is_kept_by_the_broker():
    data, pos = _segment(_v2(0), _v2(3), _v2(6))
    bad = write_at(bytearray(data), pos[1] + 16, b"\x03")
    r = scan_segment(bytes(bad), base_offset=0)
    assert kinds_at(r, pos[1]) == {"invalid_magic"}
    assert r.valid_bytes == len(data) == kafka_recover(bytes(bad), 0)
    assert r.batches == 3
    # The index rebuild follows the same rule (it used to stop at the magic-3 batch).
    offsets, _, valid = build_indexes(bytes(bad), 0, interval_bytes=0)
    assert valid == len(data) and [e.position for e in offsets] == pos[1:]


def test_oversize_batch_with_a_valid_crc_is_kept_but_reported():
    data, pos = _segment(_v2(0), _v2(3, size=3000), _v2(6))
    r = scan_segment(data, base_offset=0, max_message_size=1000)
    assert kinds_at(r, pos[1]) == {"oversize_batch"}
    assert r.valid_bytes == len(data) == kafka_recover(data, 0)
    assert r.status == "ok" and r.findings[0].to_dict()["class"] == "anomaly"


def test_bad_crc_is_cut_even_when_everything_else_looks_fine():
    data, pos = _segment(_v2(0), _v2(3), _v2(6))
    bad = flip_bit(bytearray(data), pos[2] + CRC_OFFSET, 0)
    r = scan_segment(bytes(bad), base_offset=0)
    assert (r.cut.kind, r.valid_bytes) == ("crc_mismatch", pos[2])
    assert r.valid_bytes == kafka_recover(bytes(bad), 0)


def test_legacy_messages_and_segment_base():
    msgs = [build_legacy_message(o, None, b"v%d" % o, magic=1, timestamp=T0) for o in range(5, 9)]
    data, pos = _segment(*msgs)
    assert scan_segment(data, base_offset=5).findings == []
    r = scan_segment(data, base_offset=6)
    assert kinds_at(r, 0) == {"base_offset_mismatch", "offset_overflow"}
    r = scan_segment(data, base_offset=5, index_interval_bytes=0)
    assert r.findings == [] and r.valid_bytes == len(data)


def test_leader_epoch_going_down_is_reported():
    data, pos = _segment(_v2(0, partition_leader_epoch=3), _v2(3, partition_leader_epoch=2))
    r = scan_segment(data, base_offset=0)
    assert kinds_at(r, pos[1]) == {"leader_epoch_regression"}
    assert r.epochs == [(3, 0)]
    assert r.status == "ok" and r.findings[0].cls == "anomaly"     # the broker keeps both batches


def test_one_high_leader_epoch_is_one_finding_at_its_batch():
    """One flipped epoch byte (outside the CRC) sets every later batch below it:
    one finding, at the batch that caused it, counting the batches after it."""
    data, pos = _segment(_v2(0, partition_leader_epoch=0), _v2(3, partition_leader_epoch=65280),
                         *(_v2(o, partition_leader_epoch=0) for o in range(6, 30, 3)))
    r = scan_segment(data, base_offset=0)
    (f,) = r.findings
    assert (f.kind, f.position, f.offset, f.cls) == ("leader_epoch_regression", pos[1], 3, "anomaly")
    assert f.message.startswith("the 8 later batches (offsets 6..27) have partition leader epochs below 65280")
    assert r.not_listed == {} and r.status == "ok"


def test_findings_past_the_first_50_of_a_kind_are_counted_not_made_up():
    data, _ = _segment(*(_v2(o) for o in range(0, 180, 3)))
    r = scan_segment(data, base_offset=1000)         # a wrongly named segment: every batch is below it
    kinds = [f.kind for f in r.findings]
    assert kinds.count("base_offset_mismatch") == 50
    assert r.not_listed["base_offset_mismatch"] == 10
    assert all(f.position is not None for f in r.findings)


def test_empty_and_tiny_files():
    assert scan_segment(b"").status == "ok"
    r = scan_segment(bytes(5))
    assert (r.cut.kind, r.valid_bytes) == ("zero_tail", 0)
    r = scan_segment(b"\x01" * 12)
    assert (r.cut.kind, r.valid_bytes, r.status) == ("trailing_bytes", 0, "torn_tail")


def test_large_zero_tail_and_garbage_are_scanned_quickly():
    import time

    data, _ = _segment(_v2(0), _v2(3))
    big = data + bytes(8 << 20) + garbage(1 << 20, 9) + _v2(6) + bytes(1 << 20)
    t = time.monotonic()
    r = scan_segment(big, base_offset=0)
    assert time.monotonic() - t < 5
    assert r.valid_bytes == len(data)
    assert r.intact_beyond and r.intact_beyond[0][2] == 1


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_first_nonzero_finds_the_first_non_zero_byte(kind):
    from kdump.check.resync import _ZERO_CHUNK, first_nonzero

    size = 2 * _ZERO_CHUNK + 100
    for where in (0, 1, _ZERO_CHUNK - 1, _ZERO_CHUNK, _ZERO_CHUNK + 7, size - 1, None):
        data = bytearray(size)
        if where is not None:
            data[where] = 0x80
        buf = kind(data)
        for start, end in ((0, size), (5, size), (_ZERO_CHUNK + 8, size), (0, _ZERO_CHUNK), (9, 9)):
            want = where if where is not None and start <= where < end else None
            assert first_nonzero(buf, start, end) == want, (where, start, end)


def test_scan_file_reads_without_writing(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(_v2(0) + b"\x00" * 30)
    before = (p.read_bytes(), p.stat().st_mtime_ns)
    r = scan_file(str(p), base_offset=0)
    assert r.cut.kind == "zero_tail"
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == [p.name]


# -- the inline fast path agrees with the full per-batch checks ----------------------------------

def _slow_walk(self, batches):
    for b in batches:
        cut = self.batch(b)
        if cut is not None:
            return cut
    return None


def _fields(r):
    return (r.valid_bytes, r.cut, r.batches, r.records, r.first_offset, r.last_offset, r.max_timestamp, r.findings,
            r.epochs, r.intact_beyond, [(o, p, b is None) for o, p, b in r.txn_events])


@pytest.mark.parametrize("name", IDS)
def test_fast_path_equals_the_per_batch_checks(name, monkeypatch):
    import kdump.check.scan as scan_module

    s = seg(name)
    cases = [s.full, s.data + s.data[s.last.position:], bytes(set_base_offset(bytearray(s.data), s.mid.position, 0)),
             s.data + bytes(100)]
    for interval in (4096, 100, 0):
        fast = [_fields(scan_segment(c, base_offset=s.base, index_interval_bytes=interval)) for c in cases]
        with monkeypatch.context() as m:
            m.setattr(scan_module._Scan, "walk", _slow_walk)
            slow = [_fields(scan_segment(c, base_offset=s.base, index_interval_bytes=interval)) for c in cases]
        assert fast == slow


def test_fast_path_with_epochs_transactions_and_index_regressions(monkeypatch):
    import kdump.check.scan as scan_module

    parts = [_v2(3 * i, size=400, partition_leader_epoch=i // 4) for i in range(30)]
    parts[12] = _v2(20, size=400, partition_leader_epoch=2)
    parts[20] = _v2(60, size=400, partition_leader_epoch=1)
    data, _ = _segment(*parts)
    txn = FIXTURES.joinpath("generated/transactions-0/00000000000000000000.log").read_bytes()
    for buf, base in ((data, 0), (txn, 0)):
        for interval in (4096, 1000, 0):
            fast = _fields(scan_segment(buf, base_offset=base, index_interval_bytes=interval))
            with monkeypatch.context() as m:
                m.setattr(scan_module._Scan, "walk", _slow_walk)
                assert _fields(scan_segment(buf, base_offset=base, index_interval_bytes=interval)) == fast
