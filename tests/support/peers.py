"""kafka-python as an independent reader of segment bytes, and kdump in the same shape.

The tests compare the two record for record, so both sides are reduced here to plain
tuples: ``(offset, timestamp, key, value, headers)`` with headers as a tuple of
``(str key, bytes | None value)``. Differences of convention, not of content, are
normalised here and nowhere else:

- kafka-python gives ``None`` as the timestamp (and timestamp type) of magic 0 messages;
  Kafka and kdump use -1 (NoTimestampType).
- kafka-python decodes header keys to ``str``; kdump keeps the raw bytes.
- for v0/v1 kafka-python's ``base_offset`` is the shallow entry's offset, which for a
  wrapper is the *last* inner offset (kdump's ``last_offset``).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka.record import MemoryRecords

from kdump.format.walk import Walker, decode_records
from kdump.storage.mapped import MappedFile

RecordTuple = tuple  # (offset, timestamp, key, value, headers)


class BatchFields(NamedTuple):
    """The batch-level fields kafka-python exposes, in kdump's conventions."""

    magic: int
    entry_offset: int        # v2: base offset; v0/v1: the shallow entry's own offset
    timestamp_type: int      # -1 for magic 0
    crc_valid: bool
    producer_id: int         # -1 where the format has none (v0/v1)
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool
    count: int | None        # records_count (v2) - None for v0/v1, which kafka-python does not expose


def _ts(value: int | None) -> int:
    return -1 if value is None else value


def _headers_str(headers) -> tuple:
    return tuple((k if isinstance(k, str) else bytes(k).decode("utf-8"), None if v is None else bytes(v))
                 for k, v in headers)


def kafka_python_decode(data: bytes) -> tuple[list[BatchFields], list[RecordTuple]]:
    """All batches and records of a segment's bytes, as kafka-python reads them.

    kafka-python stops silently at a partial last entry, as Kafka does, so a torn file
    yields its intact prefix.
    """
    batches: list[BatchFields] = []
    records: list[RecordTuple] = []
    mem = MemoryRecords(bytes(data))
    while True:
        batch = mem.next_batch()
        if batch is None:
            break
        # The CRC must be checked before iterating: iteration swaps in the decompressed buffer.
        crc_ok = batch.validate_crc()
        if batch.magic >= 2:
            fields = BatchFields(2, batch.base_offset, batch.timestamp_type, crc_ok, batch.producer_id,
                                 batch.producer_epoch, batch.base_sequence, batch.is_transactional,
                                 batch.is_control_batch, batch.records_count)
        else:
            fields = BatchFields(batch.magic, batch.base_offset, _ts(batch.timestamp_type), crc_ok,
                                 -1, -1, -1, False, False, None)
        batches.append(fields)
        for rec in batch:
            records.append((rec.offset, _ts(rec.timestamp), rec.key, rec.value, _headers_str(rec.headers)))
    return batches, records


def kafka_python_decode_file(path: str) -> tuple[list[BatchFields], list[RecordTuple]]:
    with open(path, "rb") as f:
        return kafka_python_decode(f.read())


class KdumpDecoded(NamedTuple):
    batches: list[BatchFields]
    records: list[RecordTuple]
    raw_batches: list          # kdump.model.Batch
    raw_records: list          # kdump.model.Record
    stop: object               # the walker's stop Finding, None for a clean end


def kdump_decode_buffer(buf) -> KdumpDecoded:
    walker = Walker(buf)
    fields, tuples, raw_batches, raw_records = [], [], [], []
    for batch in walker:
        recs = decode_records(buf, batch)
        raw_batches.append(batch)
        raw_records.extend(recs)
        entry_offset = batch.base_offset if batch.magic >= 2 else batch.last_offset
        fields.append(BatchFields(batch.magic, entry_offset, batch.timestamp_type, batch.crc_valid,
                                  batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                  batch.is_transactional, batch.is_control,
                                  batch.count if batch.magic >= 2 else None))
        for r in recs:
            tuples.append((r.offset, r.timestamp, None if r.key is None else bytes(r.key),
                           None if r.value is None else bytes(r.value), _headers_str(r.headers)))
    return KdumpDecoded(fields, tuples, raw_batches, raw_records, walker.stop)


def kdump_decode_file(path: str) -> KdumpDecoded:
    with MappedFile(path) as f:
        return kdump_decode_buffer(f.buf)
