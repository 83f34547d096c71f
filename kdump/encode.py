"""Encoders: the inverse of the decoders, for fixtures, tests and repair tools.

Everything here writes bytes the way a broker would leave them on disk, including the
odd-but-legal shapes (empty batches, a lastOffsetDelta larger than the records present,
LogAppendTime batches whose record deltas still hold the producer's times) so tests can
exercise the decoder on them without a broker. The layouts are those of
``batch.py``/``legacy.py``/``records.py``; the checksums are computed, never taken.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kdump.errors import InvalidFileError
from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, LOG_OVERHEAD, V2_HEADER
from kdump.format.checkpoint import OffsetEntry, encode_checkpoint
from kdump.format.codecs import compress
from kdump.format.control import ABORT, COMMIT, encode_control_key, encode_marker_value
from kdump.format.crc import crc32, crc32c
from kdump.format.snapshot import ENTRY, HEADER, SNAPSHOT_VERSION
from kdump.format.varint import encode_varint
from kdump.model import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
    ProducerEntry,
)

__all__ = [
    "build_v2_batch", "build_control_batch", "build_end_txn_marker",
    "build_legacy_message", "build_legacy_wrapper", "encode_v2_record", "encode_offset_commit",
    "encode_group_metadata_key", "encode_snapshot", "encode_offsets", "encode_uuid", "encode_partition_metadata",
    "encode_clean_shutdown",
]

_CRC = struct.Struct(">I")
_LEGACY_HEAD = struct.Struct(">qiIbb")     # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


# -- input normalisation ----------------------------------------------------------------------

def _field(rec: Any, name: str, default: Any = None) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(name, default)
    return getattr(rec, name, default)


def _as_v2_input(rec: Any, index: int, base_offset: int) -> tuple[int, int, Any, Any, Sequence]:
    """(offset_delta, timestamp, key, value, headers) from a tuple, dict or Record-like object.

    Tuples are positional ``(offset_delta, timestamp, key, value[, headers])``. Dicts and
    objects may give ``offset_delta`` or an absolute ``offset`` (a kdump Record has the
    latter); with neither the record's position in the list is its delta.
    """
    if isinstance(rec, (tuple, list)) and not hasattr(rec, "_fields"):
        delta, ts, key, value = rec[:4]
        headers = rec[4] if len(rec) > 4 else ()
        return delta, ts, key, value, headers or ()
    delta = _field(rec, "offset_delta")
    if delta is None:
        offset = _field(rec, "offset")
        delta = index if offset is None else offset - base_offset
    return (delta, _field(rec, "timestamp", -1), _field(rec, "key"), _field(rec, "value"),
            _field(rec, "headers", ()) or ())


def _utf8(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


def _nullable(data: bytes | str | None) -> bytes:
    """A varint length (-1 for null) and the bytes: the key/value/header-value encoding."""
    if data is None:
        return encode_varint(-1)
    data = _utf8(data)
    return encode_varint(len(data)) + data


# -- magic 2 ----------------------------------------------------------------------------------

def encode_v2_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                     headers: Iterable[tuple[str | bytes, bytes | None]] = (), attributes: int = 0) -> bytes:
    """One record, length prefix included (``DefaultRecord.writeTo``)."""
    headers = list(headers)
    parts = [bytes((attributes & 0xFF,)), encode_varint(timestamp_delta), encode_varint(offset_delta),
             _nullable(key), _nullable(value), encode_varint(len(headers))]
    for hkey, hvalue in headers:
        hk = _utf8(hkey)
        parts.append(encode_varint(len(hk)) + hk)      # header keys are never null
        parts.append(_nullable(hvalue))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def build_v2_batch(records: Iterable[Any], *, base_offset: int = 0, codec: int = 0, timestamp_type: int = 0,
                   base_timestamp: int | None = None, max_timestamp: int | None = None,
                   producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                   is_transactional: bool = False, is_control: bool = False, partition_leader_epoch: int = -1,
                   delete_horizon_ms: int | None = None, last_offset_delta: int | None = None,
                   records_count: int | None = None, xerial: bool = True) -> bytes:
    """A whole v2 batch, log overhead included, with its CRC-32C.

    Defaults follow the producer: the base timestamp is the first record's (deltas may be
    negative), the max timestamp the largest, lastOffsetDelta the last record's delta.
    For an empty batch both timestamps default to -1 as compaction leaves them. With
    LogAppendTime pass ``max_timestamp`` as the broker time: the records keep their
    create-time deltas, as the broker rewrites only the header. ``delete_horizon_ms``
    takes the base-timestamp slot (KIP-534), so record deltas are relative to it.
    """
    items = [_as_v2_input(r, i, base_offset) for i, r in enumerate(records)]
    stamps = [ts for _, ts, _, _, _ in items]
    if delete_horizon_ms is not None:
        if base_timestamp is not None and base_timestamp != delete_horizon_ms:
            raise ValueError("base_timestamp and delete_horizon_ms share one field; give one of them")
        base_timestamp = delete_horizon_ms
    if base_timestamp is None:
        base_timestamp = stamps[0] if stamps else -1
    if max_timestamp is None:
        max_timestamp = max(stamps) if stamps else -1
    if last_offset_delta is None:
        last_offset_delta = items[-1][0] if items else 0
    if records_count is None:
        records_count = len(items)

    payload = b"".join(encode_v2_record(delta, ts - base_timestamp, key, value, headers)
                       for delta, ts, key, value, headers in items)
    if codec:
        payload = compress(codec, payload, 2, xerial)

    attributes = codec & COMPRESSION_MASK
    if timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG

    batch_length = V2_HEADER.size - LOG_OVERHEAD + len(payload)
    head = V2_HEADER.pack(base_offset, batch_length, partition_leader_epoch, 2, 0, attributes,
                          last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                          base_sequence, records_count)
    out = bytearray(head + payload)
    # The CRC starts at the attributes so that base offset, length and leader epoch can be
    # rewritten by the broker without recomputing it.
    _CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def build_control_batch(control_type: int, value: bytes | None, *, base_offset: int = 0, timestamp: int = 0,
                        producer_id: int = -1, producer_epoch: int = -1, is_transactional: bool = False,
                        partition_leader_epoch: int = -1, key_version: int = 0) -> bytes:
    """A one-record control batch: key ``version | type``, value as given.

    KRaft control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) are
    not transactional and have no producer; their value is the caller's serialised message.
    """
    key = encode_control_key(control_type, key_version)
    return build_v2_batch([(0, timestamp, key, value)], base_offset=base_offset, producer_id=producer_id,
                          producer_epoch=producer_epoch, is_transactional=is_transactional, is_control=True,
                          partition_leader_epoch=partition_leader_epoch)


def build_end_txn_marker(commit: bool, *, base_offset: int, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int = 0, timestamp: int = 0, partition_leader_epoch: int = -1) -> bytes:
    """A COMMIT or ABORT marker as the transaction coordinator has the leader write it."""
    return build_control_batch(COMMIT if commit else ABORT, encode_marker_value(coordinator_epoch),
                               base_offset=base_offset, timestamp=timestamp, producer_id=producer_id,
                               producer_epoch=producer_epoch, is_transactional=True,
                               partition_leader_epoch=partition_leader_epoch)


# -- magic 0 and 1 ----------------------------------------------------------------------------

def _legacy_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return _INT32.pack(-1)
    data = _utf8(data)
    return _INT32.pack(len(data)) + data


def build_legacy_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int,
                         timestamp: int = -1, codec: int = 0, timestamp_type: int = 0) -> bytes:
    """One v0/v1 entry (``offset | size | crc | magic | attributes | [timestamp] | key | value``).

    ``codec`` only sets the attribute bits: a wrapper's value is already compressed.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy messages have magic 0 or 1, not {magic}")
    attributes = codec & COMPRESSION_MASK
    if magic == 1 and timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    body = bytes((magic, attributes))
    if magic == 1:
        body += _INT64.pack(timestamp)
    body += _legacy_bytes(key) + _legacy_bytes(value)
    # CRC-32 (IEEE) over magic..end; it is the first field of the message itself.
    message = _CRC.pack(crc32(body)) + body
    return _INT64.pack(offset) + _INT32.pack(len(message)) + message


def _as_legacy_input(msg: Any) -> tuple[int, int, Any, Any]:
    """(absolute offset, timestamp, key, value): tuples are ``(offset, timestamp, key, value)``."""
    if isinstance(msg, (tuple, list)) and not hasattr(msg, "_fields"):
        offset, ts, key, value = msg[:4]
        return offset, ts, key, value
    return _field(msg, "offset"), _field(msg, "timestamp", -1), _field(msg, "key"), _field(msg, "value")


def build_legacy_wrapper(messages: Sequence[Any], *, magic: int, codec: int, wrapper_offset: int | None = None,
                         timestamp: int | None = None, timestamp_type: int = 0, xerial: bool = True) -> bytes:
    """A compressed v0/v1 wrapper holding ``messages`` (absolute offsets) as its inner set.

    Inner offsets are written absolute for v0 and relative to the first message for v1
    (0..n-1 when contiguous). The wrapper carries the last absolute offset unless
    ``wrapper_offset`` says otherwise (librdkafka wrote 0). Its v1 timestamp defaults to
    the largest inner one; with LogAppendTime pass the broker time. Pre-built entries
    (bytes) are taken verbatim, for inner sets no well-behaved producer writes.
    """
    if not messages:
        raise ValueError("a wrapper needs at least one inner message (Kafka rejects empty ones)")
    if codec == 0:
        raise ValueError("a wrapper must be compressed")
    inner = []
    offsets = []
    stamps = []
    first = None
    for msg in messages:
        if isinstance(msg, (bytes, bytearray, memoryview)):
            inner.append(bytes(msg))
            continue
        offset, ts, key, value = _as_legacy_input(msg)
        if first is None:
            first = offset
        offsets.append(offset)
        stamps.append(ts)
        stored = offset if magic == 0 else offset - first
        inner.append(build_legacy_message(stored, key, value, magic=magic, timestamp=ts))
    if wrapper_offset is None:
        if not offsets:
            raise ValueError("wrapper_offset is required when the inner messages are pre-built")
        wrapper_offset = offsets[-1]
    if timestamp is None:
        timestamp = max(stamps) if (magic == 1 and stamps) else -1
    value = compress(codec, b"".join(inner), magic, xerial)
    return build_legacy_message(wrapper_offset, None, value, magic=magic, timestamp=timestamp, codec=codec,
                                timestamp_type=timestamp_type)


# Inner messages of a legacy record-count bomb go to the compressor this many at a time.
_BOMB_CHUNK = 1 << 16


def build_legacy_count_bomb(count: int, *, magic: int = 1, codec: int = 1, wrapper_offset: int | None = None,
                            same_offset: bool = False) -> bytes:
    """A compressed v0/v1 wrapper of ``count`` empty inner messages (null key and value, offsets
    0..count-1, relative for v1; 34 bytes each for v1): 2 million are 68 MB decompressed in a
    wrapper of 5.5 MB. ``same_offset``: every one at inner offset 0, a thousand times smaller
    (a fuzz seed). gzip is compressed as a stream, the set never held whole."""
    body = bytes((magic, 0)) + (_INT64.pack(-1) if magic == 1 else b"") + _INT32.pack(-1) * 2
    message = _CRC.pack(crc32(body)) + body
    tail = _INT32.pack(len(message)) + message
    pack = _INT64.pack
    spans = ((lo, min(lo + _BOMB_CHUNK, count)) for lo in range(0, count, _BOMB_CHUNK))
    if same_offset:
        chunks = ((pack(0) + tail) * (hi - lo) for lo, hi in spans)
    else:
        chunks = (b"".join([pack(i) + tail for i in range(lo, hi)]) for lo, hi in spans)
    if codec == 1:
        import zlib

        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        value = b"".join([z.compress(chunk) for chunk in chunks] + [z.flush()])
    else:
        value = compress(codec, b"".join(chunks), magic)
    last = (0 if same_offset else count - 1) if wrapper_offset is None else wrapper_offset
    return build_legacy_message(last, None, value, magic=magic, timestamp=-1, codec=codec)


# -- __consumer_offsets records ---------------------------------------------------------------

_OFFSET_COMMIT_KEY_VERSION = 1       # OffsetCommitKey (version 0 is the legacy LegacyOffsetCommitKey)
_OFFSET_COMMIT_VALUE_VERSION = 3     # offset, leaderEpoch, metadata, commitTimestamp
_GROUP_METADATA_KEY_VERSION = 2


def _short_string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def encode_offset_commit(group: str, topic: str, partition: int, offset: int | None, *, commit_timestamp: int = 0,
                         metadata: str = "", leader_epoch: int = -1) -> tuple[bytes, bytes | None]:
    """(key, value) of an OffsetCommit record as the group coordinator writes it; ``offset``
    None gives the tombstone (a null value)."""
    key = struct.pack(">h", _OFFSET_COMMIT_KEY_VERSION) + _short_string(group) + _short_string(topic) \
        + _INT32.pack(partition)
    if offset is None:
        return key, None
    value = struct.pack(">hqi", _OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch) + _short_string(metadata) \
        + _INT64.pack(commit_timestamp)
    return key, value


def encode_group_metadata_key(group: str) -> bytes:
    """The key of a classic group's GroupMetadata record (its null value deletes the group)."""
    return struct.pack(">h", _GROUP_METADATA_KEY_VERSION) + _short_string(group)


# The smallest record there is: length 6, then attributes, timestamp delta, offset delta,
# null key, null value and no headers, one byte each.
EMPTY_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"


def build_record_count_bomb(count: int, *, codec: int = 4, base_offset: int = 0) -> bytes:
    """A v2 batch of ``count`` empty records (7 bytes each, every one at the base offset),
    compressed: 9.5 million of them are 64 MiB decompressed in a batch of a few KB. A
    decoder that makes one list of a batch's records needs gigabytes for it."""
    payload = compress(codec, EMPTY_RECORD * count, 2)
    attributes = codec & COMPRESSION_MASK
    batch_length = V2_HEADER.size - LOG_OVERHEAD + len(payload)
    head = V2_HEADER.pack(base_offset, batch_length, 0, 2, 0, attributes, count - 1, 0, 0, -1, -1, -1, count)
    out = bytearray(head + payload)
    _CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


# -- side files (the broker's writers' layouts; kdump itself writes only checkpoints and indexes) --

def encode_snapshot(entries: Iterable[ProducerEntry | tuple]) -> bytes:
    """The bytes of a version-1 snapshot holding ``entries``, with its CRC."""
    body = bytearray()
    n = 0
    for entry in entries:
        try:
            body += ENTRY.pack(*entry)
        except struct.error as e:
            raise InvalidFileError(f"producer entry {tuple(entry)} does not fit the snapshot layout: {e}",
                                   position=HEADER.size + len(body)) from None
        n += 1
    tail = struct.pack(">i", n) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(tail)) + tail


def encode_offsets(entries: Iterable[OffsetEntry | tuple[str, int, int]]) -> bytes:
    """An offset checkpoint (recovery point, log start, replication, cleaner) holding ``entries``."""
    return encode_checkpoint(OffsetEntry(*e) for e in entries)


def encode_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def encode_partition_metadata(topic_id: str, version: int = 0) -> bytes:
    return f"version: {version}\ntopic_id: {topic_id}".encode("utf-8")


def encode_clean_shutdown(broker_epoch: int, version: int = 0) -> bytes:
    return json.dumps({"version": version, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()
