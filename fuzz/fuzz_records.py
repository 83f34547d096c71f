"""Fuzz the record decoders: v2 record sections, legacy inner message sets, varints.

Input: ``flags | count (1 or 4 bytes) | payload``. The flags pick the batch attributes
(control, LogAppendTime, a base sequence near the int32 wrap, a base timestamp near the
int64 end so that deltas overflow it), how the record count is read, and the mode:

- v2 (default): ``payload`` is an uncompressed v2 records section decoded against a
  header made from the flags; the C decoder must agree with the pure-Python one;
- legacy: ``payload`` is the decompressed inner message set of a v0/v1 wrapper;
- varint: ``payload`` starts with a varint/varlong/uvarint;
- bomb (the legacy and varint flags both): a record-count bomb, ``count`` x BOMB_SCALE empty
  records then ``payload``, decoded a slice at a time (never more than RECORDS_SLICE records
  at once), C against Python; a record-count limit below the count refuses it before decoding.
  The same section zstd-compressed is decoded from a window of its stream (record_stream's
  threshold and window shrunk) and must give the same slices and error as the whole section.
"""

from __future__ import annotations

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import LIMITS, expect, outcome, pure_python  # noqa: E402

import kdump.format.kraft_control  # noqa: E402,F401 - imported lazily by kdump; load before instrumenting
from kdump.encode import (  # noqa: E402
    EMPTY_RECORD,
    build_legacy_message,  # noqa: E402
    build_record_count_bomb,
)
from kdump.errors import KdumpError, RecordCountLimitError  # noqa: E402
from kdump.format import (
    record_stream,  # noqa: E402
    varint,  # noqa: E402
)
from kdump.format.codecs import (  # noqa: E402
    GZIP,
    ZSTD,
    Limits,  # noqa: E402
    compress,
)
from kdump.format.legacy import decode_legacy, parse_legacy  # noqa: E402
from kdump.format.record_stream import v2_record_slices  # noqa: E402
from kdump.format.records import RECORDS_SLICE, decode_v2_payload  # noqa: E402
from kdump.model import Batch  # noqa: E402

CONTROL, LOG_APPEND, SEQ_WRAP, WIDE_COUNT, LEGACY, VARINT, MAGIC1, TS_EDGE = (1 << i for i in range(8))
BOMB = LEGACY | VARINT  # both: the bomb mode
BOMB_SCALE = 1021       # a bomb holds count x this many empty records, then the payload
BASE_OFFSET = 1 << 40
BASE_TS = 1_700_000_000_000
EDGE_TS = (1 << 63) - 5          # TS_EDGE: a timestampDelta above 4 wraps Kafka's long sum


def v2_batch(flags: int, count: int) -> Batch:
    attributes = (0x20 if flags & CONTROL else 0) | (0x08 if flags & LOG_APPEND else 0)
    base_seq = 0x7FFFFFF0 if flags & SEQ_WRAP else -1
    base_ts = EDGE_TS if flags & TS_EDGE else BASE_TS
    return Batch(0, BASE_OFFSET, BASE_OFFSET + max(count - 1, 0), count, 61, 2, 0, True, attributes, 0,
                 base_ts, base_ts + 4, 7 if base_seq >= 0 else -1, 0, base_seq)


def check_v2(flags: int, count: int, payload: bytes) -> None:
    batch = v2_batch(flags, count)
    got = outcome(decode_v2_payload, payload, batch)
    if isinstance(got, list):
        expect(len(got) == count, f"{len(got)} records decoded, count says {count}")
        for r in got:
            expect(-(1 << 63) <= r.timestamp < 1 << 63, f"timestamp {r.timestamp} outside int64 (Kafka's long wraps)")
            json.dumps(r.to_dict())
    if _common.has_accel():
        with pure_python():
            reference = outcome(decode_v2_payload, payload, batch)
        expect(got == reference, f"C decoder gives {str(got)[:300]}, pure Python {str(reference)[:300]}")


def slices_digest(data: bytes, batch: Batch, limits: Limits):
    n = 0
    digest = []
    for records in v2_record_slices(data, batch, limits):
        expect(len(records) <= RECORDS_SLICE, f"a slice of {len(records)} records")
        n += len(records)
        digest.append(hash(tuple(records)))
    return n, digest


def check_bomb(flags: int, count: int, payload: bytes) -> None:
    empties = (count & 0xFF) * BOMB_SCALE
    section = EMPTY_RECORD * empties + payload
    declared = empties + (len(payload) // len(EMPTY_RECORD) if flags & CONTROL else 0)
    data = build_record_count_bomb(1, codec=0)[:61] + section       # a header, then the section
    batch = v2_batch(flags & ~CONTROL, declared)._replace(size=len(data), count=declared)
    got = outcome(slices_digest, data, batch, LIMITS)
    if isinstance(got, tuple) and got[0] != "error":
        expect(got[0] == declared, f"{got[0]} records decoded, count says {declared}")
    if _common.has_accel():
        with pure_python():
            reference = outcome(slices_digest, data, batch, LIMITS)
        expect(got == reference, f"C slices give {str(got)[:200]}, pure Python {str(reference)[:200]}")
    if declared:
        refused = outcome(lambda: next(v2_record_slices(data, batch, Limits(max_records=declared - 1))))
        expect(refused == ("error", RecordCountLimitError.__name__), f"a count over the limit gave {refused}")
    check_streamed(batch, section, 1 + count % 251)


def streamed_digest(data: bytes, batch: Batch) -> tuple[list, tuple | None]:
    """The slices' digests, and the error (class, message, position) they stopped at."""
    digest = []
    try:
        for records in v2_record_slices(data, batch, LIMITS):
            digest.append(hash(tuple(records)))
    except KdumpError as e:
        return digest, (type(e).__name__, e.message, e.position)
    return digest, None


def check_streamed(batch: Batch, section: bytes, window: int) -> None:
    """The section zstd-compressed: whole, then from a window of ``window`` bytes of its stream."""
    data = build_record_count_bomb(1, codec=0)[:61] + compress(ZSTD, section)
    batch = batch._replace(size=len(data), attributes=batch.attributes | ZSTD)
    whole = streamed_digest(data, batch)
    saved = record_stream.STREAM_THRESHOLD, record_stream.WINDOW
    record_stream.STREAM_THRESHOLD, record_stream.WINDOW = 0, window
    try:
        windowed = streamed_digest(data, batch)
    finally:
        record_stream.STREAM_THRESHOLD, record_stream.WINDOW = saved
    expect(windowed == whole, f"from a window of {window} bytes: {str(windowed)[:300]}, whole: {str(whole)[:300]}")


def check_legacy(flags: int, wrapper_offset: int, payload: bytes) -> None:
    magic = 1 if flags & MAGIC1 else 0
    wrapper = build_legacy_message(wrapper_offset, None, compress(GZIP, payload), magic=magic, codec=GZIP,
                                   timestamp=BASE_TS, timestamp_type=1 if flags & LOG_APPEND else 0)
    batch = parse_legacy(wrapper, 0, LIMITS)
    got = outcome(decode_legacy, wrapper, batch, LIMITS)
    if isinstance(got, list):
        expect(batch.count == len(got), f"parse_legacy counts {batch.count}, decode_legacy {len(got)}")
        expect(batch.base_offset == got[0].offset, "base offset differs from the first inner offset")
        for r in got:
            json.dumps(r.to_dict())
    else:
        expect(batch.count is None, "parse_legacy opened a wrapper that decode_legacy rejects")


def check_varints(payload: bytes) -> None:
    for read, bits in ((varint.read_varint, 32), (varint.read_varlong, 64)):
        got = outcome(read, payload, 0)
        if isinstance(got, tuple) and got[0] != "error":
            value, end = got
            expect(-(1 << (bits - 1)) <= value < 1 << (bits - 1), f"varint {value} outside int{bits}")
            expect(0 < end <= len(payload), f"varint end {end}")
            expect(read(varint.encode_varint(value), 0)[0] == value, f"{value} does not round-trip")
    got = outcome(varint.read_uvarint, payload, 0)
    if isinstance(got, tuple) and got[0] != "error":
        expect(varint.read_uvarint(varint.encode_uvarint(got[0]), 0)[0] == got[0], "uvarint round trip")


def check(data: bytes) -> None:
    if len(data) < 2:
        return
    flags = data[0]
    if flags & WIDE_COUNT:
        if len(data) < 5:
            return
        (count,) = struct.unpack_from(">i", data, 1)
        payload = data[5:]
    else:
        count = data[1]
        payload = data[2:]
    if flags & BOMB == BOMB:
        check_bomb(flags, count, payload)
    elif flags & VARINT:
        check_varints(payload)
    elif flags & LEGACY:
        check_legacy(flags, count, payload)
    else:
        check_v2(flags, count, payload)


if __name__ == "__main__":
    _common.main(check)
