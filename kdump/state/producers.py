"""Producer state rebuilt from a partition's log, the way a broker's ``ProducerStateManager``
rebuilds it at load (``ProducerAppendInfo``, ``ProducerStateEntry``).

Per producer id: the epoch (a batch or marker of another epoch starts afresh: the sequence
memory is cleared), the last sequence, offset and timestamp of its last data batch, the
coordinator epoch of its last marker, and the first offset of its open transaction (set by
its first transactional batch after a marker, cleared by the next COMMIT or ABORT marker,
which closes the transaction). The last stable offset is the first offset of the earliest
open transaction, or the log end when none is open. Only batch headers are read, plus the
one record of each control batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump.format.batch import NO_PRODUCER_ID
from kdump.format.control import ABORT, COMMIT
from kdump.model import CONTROL_TYPE_NAMES, AbortedTxn, Batch, ProducerEntry
from kdump.state.source import LogReader


@dataclass
class Producer:
    producer_id: int
    producer_epoch: int = -1
    last_sequence: int = -1
    last_offset: int = -1            # last offset of the last data batch (-1 after an epoch bump by a marker)
    offset_delta: int = 0
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    # counts of what this producer's transactions did here
    txn_records: int = 0             # records of the open transaction so far
    txn_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "last_sequence": self.last_sequence, "last_offset": self.last_offset,
                "last_timestamp": self.last_timestamp, "coordinator_epoch": self.coordinator_epoch,
                "current_txn_first_offset": (None if self.current_txn_first_offset < 0
                                             else self.current_txn_first_offset)}

    def snapshot_entry(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.producer_epoch, self.last_sequence, self.last_offset,
                             self.offset_delta, self.last_timestamp, self.coordinator_epoch,
                             self.current_txn_first_offset)


@dataclass
class CompletedTxn:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int                 # the marker's offset
    outcome: str                     # COMMIT | ABORT
    records: int
    bytes: int
    last_stable_offset: int          # the LSO right after the marker (what a .txnindex entry records)
    timestamp: int

    def aborted_entry(self) -> AbortedTxn:
        return AbortedTxn(0, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)

    def to_dict(self) -> dict[str, Any]:
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "first_offset": self.first_offset, "last_offset": self.last_offset, "outcome": self.outcome,
                "records": self.records, "bytes": self.bytes, "timestamp": self.timestamp}


@dataclass
class ProducerState:
    """The replayed state of one partition, and snapshots of it taken on the way."""

    producers: dict[int, Producer] = field(default_factory=dict)
    completed: list[CompletedTxn] = field(default_factory=list)
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    at_offsets: dict[int, dict[int, ProducerEntry]] = field(default_factory=dict)
    anomalies: list[tuple[int, str]] = field(default_factory=list)     # (offset, what the broker would refuse)
    # The first offset from which the log no longer holds every batch ever written: it
    # does not start at 0 (retention, a deleted segment) or the cleaner removed records
    # (an offset gap, or fewer records than a batch's offset span). Before it the replay
    # is the whole history; from it on, files written earlier may rightly know more.
    incomplete_from: int | None = None

    def complete_before(self, offset: int) -> bool:
        return self.incomplete_from is None or offset <= self.incomplete_from

    def open_transactions(self) -> list[Producer]:
        return sorted((p for p in self.producers.values() if p.current_txn_first_offset >= 0),
                      key=lambda p: p.current_txn_first_offset)

    @property
    def last_stable_offset(self) -> int | None:
        open_txns = self.open_transactions()
        if open_txns:
            return open_txns[0].current_txn_first_offset
        return self.log_end_offset

    def first_unstable_except(self, producer_id: int) -> int | None:
        firsts = [p.current_txn_first_offset for p in self.producers.values()
                  if p.current_txn_first_offset >= 0 and p.producer_id != producer_id]
        return min(firsts) if firsts else None

    def _capture(self, offset: int) -> None:
        self.at_offsets[offset] = {pid: p.snapshot_entry() for pid, p in self.producers.items()}

    # -- replay ----------------------------------------------------------------------------

    def replay(self, reader: LogReader, snapshot_offsets: list[int] = ()) -> ProducerState:
        pending = sorted(snapshot_offsets)
        for f, b, records in reader.batches(_is_control):
            first = b.base_offset if b.base_offset is not None else b.last_offset
            if self.log_start_offset is None:
                self.log_start_offset = first
                if first != 0:
                    self.incomplete_from = 0
            elif self.incomplete_from is None and (first > self.log_end_offset or (
                    b.magic >= 2 and b.count is not None and b.count < b.last_offset - first + 1)):
                self.incomplete_from = min(first, self.log_end_offset)
            while pending and b.last_offset >= pending[0]:
                self._capture(pending.pop(0))
            self.log_end_offset = b.last_offset + 1
            if b.magic < 2 or b.producer_id == NO_PRODUCER_ID:
                continue
            if b.is_control:
                self._marker(b, records)
            else:
                self._data(b)
        for offset in pending:
            if self.log_end_offset is None or offset <= self.log_end_offset:
                self._capture(offset)
        return self

    def _producer(self, b: Batch) -> Producer:
        p = self.producers.get(b.producer_id)
        if p is None:
            p = self.producers[b.producer_id] = Producer(b.producer_id)
        if b.producer_epoch < p.producer_epoch:
            self.anomalies.append((b.base_offset, f"producer {b.producer_id} writes with epoch {b.producer_epoch}, "
                                                  f"older than its epoch {p.producer_epoch}"))
        if b.producer_epoch != p.producer_epoch:       # a new epoch forgets the old sequences
            p.producer_epoch = b.producer_epoch
            p.last_sequence, p.last_offset, p.offset_delta = -1, -1, 0
        return p

    def _data(self, b: Batch) -> None:
        p = self._producer(b)
        p.last_sequence = b.last_sequence
        p.last_offset = b.last_offset
        p.offset_delta = b.last_offset - b.base_offset
        p.last_timestamp = b.max_timestamp
        if b.is_transactional:
            if p.current_txn_first_offset < 0:
                p.current_txn_first_offset = b.base_offset
                p.txn_records = p.txn_bytes = 0
            p.txn_records += b.count or 0
            p.txn_bytes += b.size
        elif p.current_txn_first_offset >= 0:
            self.anomalies.append((b.base_offset, f"producer {b.producer_id} writes a non-transactional batch while "
                                                  f"its transaction from offset {p.current_txn_first_offset} is open"))

    def _marker(self, b: Batch, records) -> None:
        if not records:
            return           # an empty control batch (left by the cleaner) changes nothing
        control = records[0].control
        p = self._producer(b)
        if control is None or control.type not in (ABORT, COMMIT):
            return
        if p.current_txn_first_offset >= 0:
            first = p.current_txn_first_offset
            others = self.first_unstable_except(p.producer_id)
            self.completed.append(CompletedTxn(
                p.producer_id, b.producer_epoch, first, b.base_offset, CONTROL_TYPE_NAMES[control.type],
                p.txn_records, p.txn_bytes, others if others is not None else b.base_offset + 1,
                records[0].timestamp))
        p.coordinator_epoch = control.coordinator_epoch if control.coordinator_epoch is not None else -1
        p.current_txn_first_offset = -1
        p.last_timestamp = records[0].timestamp
        p.txn_records = p.txn_bytes = 0


def _is_control(b: Batch) -> bool:
    return b.is_control
