"""The typed objects the decoding core produces, and the one row schema of their output.

They are immutable named tuples: cheap to build in the hot loops (one tuple per batch or
record) and read by attribute. ``FIELD_TYPES`` and the layouts after it are the row schema:
``to_dict()``, the ``--json``/NDJSON writer (``kdump.export.ndjson``) and the Arrow/Spark
columns (``kdump.export.schema``) are derived from them, and the C writer is tested against
them (tests/export/test_row_schema.py); renderers never invent fields of their own.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from kdump.findings import RECORD_UNKNOWN_SCHEMA, class_of

# -- codes and their Kafka names --------------------------------------------------------------

COMPRESSION_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
NO_TIMESTAMP_TYPE, CREATE_TIME, LOG_APPEND_TIME = -1, 0, 1
TIMESTAMP_TYPE_NAMES = {NO_TIMESTAMP_TYPE: "NoTimestampType", CREATE_TIME: "CreateTime",
                        LOG_APPEND_TIME: "LogAppendTime"}

# v2 batch attribute bits (DefaultRecordBatch); legacy messages share bits 0-3.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40


# -- the row schema -------------------------------------------------------------------------
# Every field of a ``--json`` object or an export row, declared once: name -> type, in Spark
# DDL words. In JSON a bigint, int or timestamp is a number (a timestamp in epoch ms, -1 for
# none), binary a string under --encoding, and headers a list of {"key", "value"} objects.

HEADERS_TYPE = "array<struct<key:string,value:binary>>"
FIELD_TYPES: dict[str, str] = {
    # where a row comes from
    "topic": "string", "partition": "int", "segment": "string", "file": "string",
    # a batch (or legacy shallow message)
    "position": "bigint", "base_offset": "bigint", "last_offset": "bigint", "count": "int", "size": "bigint",
    "magic": "int", "crc": "bigint", "crc_valid": "boolean", "compression": "string", "timestamp_type": "string",
    "base_timestamp": "bigint", "max_timestamp": "bigint", "partition_leader_epoch": "int",
    "producer_id": "bigint", "producer_epoch": "int", "base_sequence": "int",
    "is_transactional": "boolean", "is_control": "boolean", "delete_horizon_ms": "bigint",
    # a record
    "offset": "bigint", "timestamp": "timestamp", "key_size": "int", "value_size": "int", "sequence": "int",
    "key": "binary", "value": "binary", "headers": HEADERS_TYPE,
    "txn": "string",                      # committed, aborted, open (state/txn_status.py); null: no transaction
    "control": "struct",                  # JSON only: Control.to_dict() on records of control batches
    # damage, and export's NDJSON lines as Spark's text writer takes them
    "records_error": "string", "error_kind": "string", "error": "string", "line": "string", "is_error": "boolean",
}
JSON_NULLABLE = frozenset({"base_offset", "count", "delete_horizon_ms", "key", "value"})

# The --json batch line: {"file", *BATCH_FIELDS, "records": [...]?, "records_error"?}.
BATCH_FIELDS = ("position", "base_offset", "last_offset", "count", "size", "magic", "crc", "crc_valid",
                "compression", "timestamp_type", "base_timestamp", "max_timestamp", "partition_leader_epoch",
                "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control",
                "delete_horizon_ms")
# A record object: RECORD_FIELDS, then LEGACY_RECORD_FIELDS for v0/v1 messages (their own
# CRC), then "control" on records of control batches, then what a decoder adds.
RECORD_FIELDS = ("offset", "timestamp", "key_size", "value_size", "sequence", "key", "value", "headers")
LEGACY_RECORD_FIELDS = ("crc", "crc_valid")
HEADER_FIELDS = ("key", "value")


def compression_name(codec: int) -> str:
    return COMPRESSION_NAMES[codec] if 0 <= codec < len(COMPRESSION_NAMES) else f"unknown({codec})"


Encoder = Callable[[bytes], Any]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- log segments -----------------------------------------------------------------------------


def sequence_at(sequence: int, delta: int) -> int:
    """The producer sequence ``delta`` records on from ``sequence`` (``delta`` < 0: back), wrapping
    within 0..2^31-1 as ``DefaultRecordBatch.incrementSequence``/``decrementSequence`` do; -1
    (no sequence) stays -1. The C twin is speedups.h's ``sequence_at``."""
    return (sequence + delta) & 0x7FFFFFFF if sequence >= 0 else -1


def timestamp_type_of(magic: int, attributes: int) -> int:
    """CREATE_TIME or LOG_APPEND_TIME from a v1/v2 attributes byte; magic 0 has none."""
    if magic == 0:
        return NO_TIMESTAMP_TYPE
    return LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

class Batch(NamedTuple):
    """A v2 record batch, or a v0/v1 shallow message (a compressed wrapper counts as one).

    For v0/v1: ``base_offset`` is the first inner offset and ``last_offset`` the wrapper's
    offset; ``count`` is the number of inner messages (None if the wrapper does not
    decompress); producer fields are -1 and ``partition_leader_epoch`` is -1.
    """

    position: int              # byte position of the batch in its file
    base_offset: int | None
    last_offset: int
    # v2: the raw recordsCount field; it shadows tuple.count(), which nothing calls on a Batch
    count: int | None  # type: ignore[assignment]
    size: int                  # bytes on disk, including the 12-byte log overhead
    magic: int
    crc: int                   # stored CRC (unsigned)
    crc_valid: bool
    attributes: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return timestamp_type_of(self.magic, self.attributes)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when the flag is set the base timestamp field holds the delete horizon."""
        if self.magic >= 2 and self.attributes & DELETE_HORIZON_FLAG:
            return self.base_timestamp
        return None

    @property
    def last_sequence(self) -> int:
        if self.base_offset is None:
            return -1
        return sequence_at(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_position(self) -> int:
        return self.position + self.size

    def to_dict(self) -> dict[str, Any]:
        """The JSON model of the batch: BATCH_FIELDS, the codes by their Kafka names."""
        named = {"compression": compression_name(self.compression),
                 "timestamp_type": TIMESTAMP_TYPE_NAMES[self.timestamp_type]}
        return {name: named[name] if name in named else getattr(self, name) for name in BATCH_FIELDS}


# Where each field sits in a Batch, for the hot loops that index the tuple rather than pay for
# named access. Literal places, so that a type checker knows each one's type; the check below
# holds them to Batch._fields, the C twins name the same places in speedups.h (BF_*), and the
# native module refuses to load if its order differs from Batch._fields.
B_POSITION: Final = 0
B_BASE_OFFSET: Final = 1
B_LAST_OFFSET: Final = 2
B_COUNT: Final = 3
B_SIZE: Final = 4
B_MAGIC: Final = 5
B_CRC: Final = 6
B_CRC_VALID: Final = 7
B_ATTRIBUTES: Final = 8
B_PARTITION_LEADER_EPOCH: Final = 9
B_BASE_TIMESTAMP: Final = 10
B_MAX_TIMESTAMP: Final = 11
B_PRODUCER_ID: Final = 12
B_PRODUCER_EPOCH: Final = 13
B_BASE_SEQUENCE: Final = 14
if [globals()["B_" + name.upper()] for name in Batch._fields] != list(range(len(Batch._fields))):
    raise ImportError("kdump.model: the B_* places do not follow Batch's fields")


CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                      4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


class Control(NamedTuple):
    """The key (and, for markers, value) of a control record (ControlRecordType)."""

    type: int                         # the raw type id from the key
    version: int                      # key version
    coordinator_epoch: int | None     # ABORT/COMMIT markers only
    data: dict[str, Any] | None = None  # decoded value of KRaft control records
    error: str | None = None          # the value did not decode

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, "UNKNOWN")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type_name, "version": self.version,
                               "coordinator_epoch": self.coordinator_epoch}
        if self.data is not None:
            out["data"] = self.data
        if self.error is not None:
            out["error"] = self.error
        return out


class Record(NamedTuple):
    """One record (v2) or one inner/shallow message (v0/v1)."""

    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...]
    sequence: int                     # v2: baseSequence + offsetDelta (wrapping), else -1
    control: Control | None = None   # set on records of control batches
    magic: int = 2
    crc: int | None = None           # legacy messages carry their own CRC
    crc_valid: bool | None = None

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)

    def to_dict(self, encode: Encoder | None = _b64) -> dict[str, Any]:
        """JSON model of one record; ``encode`` turns bytes into JSON values (None: raw)."""
        enc = encode or (lambda b: b)
        named = {"key": None if self.key is None else enc(self.key),
                 "value": None if self.value is None else enc(self.value),
                 "headers": [dict(zip(HEADER_FIELDS, (k.decode("utf-8", "replace"), None if v is None else enc(v))))
                             for k, v in self.headers]}
        out = {name: named[name] if name in named else getattr(self, name) for name in RECORD_FIELDS}
        if self.magic < 2:
            out.update((name, getattr(self, name)) for name in LEGACY_RECORD_FIELDS)
        if self.control is not None:
            out["control"] = self.control.to_dict()
        return out


# -- indexes and side files -------------------------------------------------------------------

class IndexEntry(NamedTuple):
    """One ``.index`` slot: absolute offset and byte position in the ``.log``."""

    offset: int
    position: int

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "position": self.position}


class TimeIndexEntry(NamedTuple):
    """One ``.timeindex`` slot: a max timestamp so far and the offset it belongs to."""

    timestamp: int
    offset: int

    def to_dict(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "offset": self.offset}


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (AbortedTxn.json)."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


class ProducerEntry(NamedTuple):
    """One producer in a producer-state ``.snapshot`` (ProducerSnapshot.json)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int   # -1 when no transaction is open

    @property
    def first_sequence(self) -> int:
        return sequence_at(self.last_sequence, -self.offset_delta)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


# -- verification -----------------------------------------------------------------------------

class Finding(NamedTuple):
    """One problem found in a file: what, where (byte position, offset) and a message."""

    kind: str
    position: int | None
    offset: int | None
    message: str

    @property
    def cls(self) -> str:
        """damage | anomaly | info | error (``kdump.findings``)."""
        return class_of(self.kind)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": class_of(self.kind), "position": self.position, "offset": self.offset,
                "message": self.message}


class RecordFinding(NamedTuple):
    """A finding about one record of a batch (``record_unknown_schema``): the file, the batch's
    byte position, the record's offset, and the record type and version it carries. Every
    command shows it alike: a ``finding`` object in --json, a located line in text."""

    kind: str
    file: str
    position: int
    offset: int
    record_type: int | None
    version: int | None
    message: str

    @property
    def cls(self) -> str:
        return class_of(self.kind)

    def to_dict(self) -> dict[str, Any]:
        return {"object": "finding", "kind": self.kind, "class": self.cls, "file": self.file,
                "position": self.position, "offset": self.offset, "record_type": self.record_type,
                "version": self.version, "message": self.message}

    def line(self) -> str:
        return f"{self.file}:{self.position}: offset {self.offset}: {self.kind}: {self.message}"

    @classmethod
    def unknown_schema(cls, e: Any, file: str, position: int, offset: int) -> RecordFinding:
        """The finding of an ``errors.UnknownSchemaError`` ``e`` met at a record."""
        version = "" if e.version is None else f" version {e.version}"
        return cls(RECORD_UNKNOWN_SCHEMA, file, position, offset, e.record_type, e.version,
                   f"{e.message.rstrip('.')} (no schema for record type {e.record_type}{version} here: a newer "
                   f"Kafka's record, or damage); skipped")
