"""``kdump txn``: producers, transactions and the last stable offset of every partition,
checked against the ``.txnindex`` and producer ``.snapshot`` files and ``__transaction_state``.

Hanging follows ``kafka-transactions.sh find-hanging``: a transaction still open on a
partition whose producer's last write is older than the threshold, and that the
transaction coordinator does not list as ongoing on that partition (no transactional id
with that producer id, or its state does not name the partition). When no
``__transaction_state`` partition is among the PATHs, only the age can be judged, and the
report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump import findings as F
from kdump.check.capped import MAX_PER_KIND, Capped
from kdump.check.side_file_views import SIDE_FILE_LIMIT, read_snapshot
from kdump.decoders import transaction_state
from kdump.errors import KdumpError
from kdump.format.txnindex import txnindex_entries
from kdump.model import AbortedTxn, Finding, RecordFinding
from kdump.state.cluster_image import partition_count
from kdump.state.producers import ProducerState
from kdump.state.source import (
    CLUSTER_METADATA,
    TRANSACTION_STATE,
    LogDirs,
    LogReader,
    Partition,
    decode_records_of,
    missing_logs,
    reference_time,
    segments,
    side_files,
)
from kdump.storage.logdir import PRODUCER_SNAPSHOT, TXNINDEX
from kdump.storage.slice_reader import SliceReader
from kdump.words import duration, utc_text

ONGOING_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")
DEFAULT_HANGING_AFTER_MS = 15 * 60 * 1000        # find-hanging's --max-transaction-timeout default


@dataclass
class Coordinator:
    """The transactional ids of ``__transaction_state``, latest record first-class (a
    tombstone removes the id, as the coordinator's load does)."""

    present: bool = False
    complete: bool = True             # every __transaction_state partition is here
    ids: dict[str, dict[str, Any]] = field(default_factory=dict)
    incomplete: dict[int, str] = field(default_factory=dict)     # partition -> why its log is not whole
    errors: list[str] = field(default_factory=list)
    findings: list[RecordFinding] = field(default_factory=list)   # records skipped: no schema (record_unknown_schema)
    stops: list[str] = field(default_factory=list)
    newest_ms: int = -1                 # the newest batch timestamp of __transaction_state

    def by_producer(self) -> dict[int, tuple[str, dict[str, Any]]]:
        return {v["producerId"]: (tid, v) for tid, v in self.ids.items()}

    def load(self, dirs: LogDirs) -> Coordinator:
        found = [p.partition for p in dirs.topic(TRANSACTION_STATE)]
        if found:
            count = partition_count(dirs, TRANSACTION_STATE)
            count = max(found) + 1 if count is None else count
            self.complete = sorted(found) == list(range(count))
            if not self.complete:
                self.errors.append(f"only {len(found)} of the {count} __transaction_state partitions are here: an "
                                   f"open transaction unknown to them is judged by its age alone")
        for p in dirs.topic(TRANSACTION_STATE):
            self.present = True
            why = missing_logs(p)
            if why is not None:
                self.incomplete[p.partition], self.complete = why, False
                self.errors.append(f"incomplete: {why}; the transactional ids it holds may be stale, and an open "
                                   f"transaction unknown to __transaction_state is judged by its age alone")
            reader = LogReader(segments(p))
            for f, b, records in reader.batches(True):
                self.newest_ms = max(self.newest_ms, b.max_timestamp)
                for r, d in decode_records_of(f, b, records, transaction_state.decode, self.errors, self.findings):
                    tid = d["key"]["transactionalId"]
                    if d["value"] is None:
                        self.ids.pop(tid, None)
                    else:
                        self.ids[tid] = {**d["value"], "partition": p.partition, "offset": r.offset}
            if reader.stop is not None:
                self.stops.append(reader.stop.text())
        return self


def txn_partitions(value: dict[str, Any]) -> set[tuple[str, int]]:
    return {(t["topic"], pid) for t in value.get("transactionPartitions") or () for pid in t["partitionIds"]}


def transactional_id_object(tid: str, v: dict[str, Any]) -> dict[str, Any]:
    return {"object": "transactional_id", "transactional_id": tid, "producer_id": v["producerId"],
            "previous_producer_id": v.get("previousProducerId"), "producer_epoch": v["producerEpoch"],
            "state": v["transactionStatusName"], "timeout_ms": v["transactionTimeoutMs"],
            "partitions": [f"{t}-{n}" for t, n in sorted(txn_partitions(v))],
            "last_update_timestamp": v["transactionLastUpdateTimestampMs"],
            "start_timestamp": v["transactionStartTimestampMs"],
            "state_partition": v["partition"], "state_offset": v["offset"],
            "possibly_stale": bool(v.get("possibly_stale"))}


def _snapshot_findings(p: Partition, state: ProducerState, snaps) -> list[Finding]:
    out = []
    for f in snaps:
        try:
            _, entries = read_snapshot(f.path)      # streamed: a snapshot may hold millions of producers
        except KdumpError as e:
            out.append(Finding(F.TXN_SNAPSHOT_UNREADABLE, e.position, f.base_offset, f"{f.name}: {e.message}"))
            continue
        replayed = state.at_offsets.get(f.base_offset)
        if replayed is None:
            continue                   # beyond the log end: the broker deletes such snapshots at load
        if not state.complete_before(f.base_offset):
            continue                   # the cleaner or retention removed batches the snapshot saw
        in_snap = set()
        for e in entries():
            in_snap.add(e.producer_id)
            mine = replayed.get(e.producer_id)
            if mine is None:
                out.append(Finding(F.TXN_SNAPSHOT_MISMATCH, None, f.base_offset,
                                   f"{f.name}: producer {e.producer_id} is in the snapshot but not in the log "
                                   f"before offset {f.base_offset}"))
                continue
            diffs = [f"{name} {getattr(e, name)} in the snapshot, {getattr(mine, name)} from the log"
                     for name in ("producer_epoch", "last_sequence", "last_offset", "coordinator_epoch",
                                  "current_txn_first_offset")
                     if getattr(e, name) != getattr(mine, name)]
            if diffs:
                out.append(Finding(F.TXN_SNAPSHOT_MISMATCH, None, f.base_offset,
                                   f"{f.name}: producer {e.producer_id}: " + "; ".join(diffs)))
        for pid, mine in replayed.items():
            # Expiry drops idle producers from snapshots, never one with an open transaction.
            if pid not in in_snap and mine.current_txn_first_offset >= 0:
                out.append(Finding(F.TXN_SNAPSHOT_MISMATCH, None, f.base_offset,
                                   f"{f.name}: producer {pid} has a transaction open since offset "
                                   f"{mine.current_txn_first_offset} but is missing from the snapshot"))
    return out


def _txnindex_findings(state: ProducerState, indexes) -> list[Finding]:
    """The ``.txnindex`` entries against the aborts the log shows, the files walked a slice at a
    time: only the entries the log expects are remembered, and of the others the first
    ``MAX_PER_KIND`` are listed, the rest counted (a 100 MB file costs a slice, not gigabytes)."""
    expected = {(c.producer_id, c.last_offset): c.aborted_entry() for c in state.completed if c.outcome == "ABORT"}
    on_disk: dict[tuple[int, int], tuple[str, AbortedTxn]] = {}
    unmatched = Capped()
    for f in indexes:
        try:
            with SliceReader(f.path, SIDE_FILE_LIMIT) as data:
                for e in txnindex_entries(data.data(), lazy=True).entries:
                    key = (e.producer_id, e.last_offset)
                    if key in expected:
                        on_disk[key] = (f.name, e)
                    elif (state.log_end_offset is not None and e.last_offset < state.log_end_offset
                          and state.complete_before(e.last_offset)):
                        if unmatched.room(F.TXN_INDEX_MISMATCH) > 0:
                            unmatched.append(Finding(F.TXN_INDEX_MISMATCH, None, e.last_offset,
                                                     f"{f.name}: entry for producer {e.producer_id} ending at "
                                                     f"{e.last_offset} matches no ABORT marker closing an open "
                                                     f"transaction in the log"))
                        else:
                            unmatched.skip(F.TXN_INDEX_MISMATCH, 1)
        except KdumpError as e:
            return [Finding(F.TXN_INDEX_UNREADABLE, e.position, f.base_offset, f"{f.name}: {e.message}")]
    out = []
    for key, want in sorted(expected.items(), key=lambda kv: kv[0][1]):
        got = on_disk.get(key)
        if got is None:
            out.append(Finding(F.TXN_INDEX_MISMATCH, None, want.last_offset,
                               f"the aborted transaction of producer {want.producer_id} at {want.first_offset}.."
                               f"{want.last_offset} has no .txnindex entry (read_committed consumers would see it)"))
        elif (got[1].first_offset, got[1].last_stable_offset) != (want.first_offset, want.last_stable_offset):
            out.append(Finding(F.TXN_INDEX_MISMATCH, None, want.last_offset,
                               f"{got[0]}: producer {want.producer_id}: firstOffset {got[1].first_offset} "
                               f"lastStableOffset {got[1].last_stable_offset} on disk, {want.first_offset} and "
                               f"{want.last_stable_offset} from the log"))
    out += sorted(unmatched, key=lambda f: f.offset)
    for n in unmatched.not_listed.values():
        out.append(Finding(F.TXN_INDEX_MISMATCH, None, None,
                           f"{n} more .txnindex entries match no ABORT marker closing an open transaction in the "
                           f"log (the first {MAX_PER_KIND} are listed)"))
    return out


def analyze_partition(p: Partition, coord: Coordinator, now_ms: int, hanging_after_ms: int) -> dict[str, Any]:
    segs = segments(p)
    snaps = side_files(p, PRODUCER_SNAPSHOT)
    reader = LogReader(segs)
    state = ProducerState().replay(reader, [f.base_offset for f in snaps if f.base_offset is not None])
    if segs and segs[-1].base_offset is not None:
        state.log_end_offset = max(state.log_end_offset or 0, segs[-1].base_offset)
        if state.log_start_offset is None:
            state.log_start_offset = segs[0].base_offset
    findings = [Finding(F.TXN_PRODUCER_INVALID, None, off, msg) for off, msg in state.anomalies]
    if reader.stop is not None:
        findings.append(Finding(F.TXN_LOG_STOP, reader.stop.position, reader.stop.offset,
                                f"{reader.stop.text()}; state is rebuilt from the data before it"))
    findings += _snapshot_findings(p, state, snaps)
    findings += _txnindex_findings(state, side_files(p, TXNINDEX))
    by_pid = coord.by_producer() if coord.present else {}
    producers = []
    for pr in sorted(state.producers.values(), key=lambda x: x.producer_id):
        d = pr.to_dict()
        tid = by_pid.get(pr.producer_id)
        d["transactional_id"] = tid[0] if tid else None
        if tid is not None and pr.producer_epoch > tid[1]["producerEpoch"]:
            findings.append(Finding(F.TXN_COORDINATOR_MISMATCH, None, pr.last_offset,
                                    f"producer {pr.producer_id} ({tid[0]}) writes with epoch "
                                    f"{pr.producer_epoch}, newer than the coordinator's {tid[1]['producerEpoch']}"))
        if pr.current_txn_first_offset >= 0:
            age = now_ms - pr.last_timestamp
            named = tid is not None and tid[1]["transactionStatusName"] in ONGOING_STATES \
                and (p.topic, p.partition) in txn_partitions(tid[1])
            # The coordinator's word counts where it can speak: its record names this producer,
            # or every __transaction_state partition is here (so none names it).
            decisive = coord.present and (tid is not None or coord.complete)
            reasons = []
            if age > hanging_after_ms and not (coord.present and named):
                reasons.append(f"open for {duration(age)}")
                if decisive:
                    reasons.append("no transactional id with this producer id in __transaction_state" if tid is None
                                   else f"{tid[0]} is {tid[1]['transactionStatusName']} without this partition")
            d.update(open_txn={"first_offset": pr.current_txn_first_offset, "records": pr.txn_records,
                               "bytes": pr.txn_bytes, "age_ms": age},
                     hanging=bool(reasons), hanging_reasons=reasons)
            if decisive and tid is None:
                findings.append(Finding(F.TXN_COORDINATOR_MISMATCH, None, pr.current_txn_first_offset,
                                        f"producer {pr.producer_id} has a transaction open since offset "
                                        f"{pr.current_txn_first_offset}, unknown to __transaction_state"))
            elif decisive and not named:
                findings.append(Finding(F.TXN_COORDINATOR_MISMATCH, None, pr.current_txn_first_offset,
                                        f"producer {pr.producer_id} ({tid[0]}) has a transaction open since offset "
                                        f"{pr.current_txn_first_offset}; the coordinator says "
                                        f"{tid[1]['transactionStatusName']} without this partition"))
        producers.append(d)
    transactions = [c.to_dict() for c in state.completed]
    return {"object": "partition", "topic": p.topic, "partition": p.partition, "path": p.path,
            "log_start_offset": state.log_start_offset, "log_end_offset": state.log_end_offset,
            "last_stable_offset": state.last_stable_offset, "producers": producers,
            "transactions": transactions, **totals(transactions), "findings": [f.to_dict() for f in findings]}


def totals(transactions: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """``committed`` and ``aborted``: how many transactions, records and bytes."""
    out = {}
    for outcome, name in (("COMMIT", "committed"), ("ABORT", "aborted")):
        done = [t for t in transactions if t["outcome"] == outcome]
        out[name] = {"count": len(done), "records": sum(t["records"] for t in done),
                     "bytes": sum(t["bytes"] for t in done)}
    return out


def txn_objects(paths, *, now_ms: int | None, hanging_after_ms: int = DEFAULT_HANGING_AFTER_MS,
                transactional_id: str | None = None, producer_id: int | None = None):
    """(incomplete __transaction_state partitions, transactional id objects, notes, iterator of
    partition objects, records skipped without a schema: RecordFindings) for the PATHs."""
    dirs = LogDirs(paths)
    coord = Coordinator().load(dirs)
    notes = list(dirs.notes) + coord.errors + coord.stops
    now_ms, _, now_from = reference_time(now_ms, coord.newest_ms, f"the newest {TRANSACTION_STATE} record")
    if now_from == "the clock":
        notes.append(f"ages judged at {utc_text(now_ms)}, {now_from} (--now TIME judges at another time)")
    if not coord.present:
        notes.append("no __transaction_state partition here: hanging is judged by age alone")
    pids = None
    if transactional_id is not None:
        v = coord.ids.get(transactional_id)
        pids = {v["producerId"]} if v else set()
        if v is None:
            notes.append(f"transactional id {transactional_id} is not in __transaction_state")
    if producer_id is not None:
        pids = {producer_id} if pids is None else pids & {producer_id}

    def partitions():
        for p in dirs.all():
            if p.topic == CLUSTER_METADATA:
                continue
            obj = analyze_partition(p, coord, now_ms, hanging_after_ms)
            if pids is not None:
                obj["producers"] = [d for d in obj["producers"] if d["producer_id"] in pids]
                obj["transactions"] = [t for t in obj["transactions"] if t["producer_id"] in pids]
                obj.update(totals(obj["transactions"]))
                if not obj["producers"] and not obj["transactions"]:
                    continue
            elif not obj["producers"] and not obj["findings"]:
                continue
            yield obj

    ids = {tid: v for tid, v in coord.ids.items()
           if (transactional_id is None or tid == transactional_id) and (pids is None or v["producerId"] in pids)}
    ids = {tid: {**v, "possibly_stale": v["partition"] in coord.incomplete} for tid, v in ids.items()}
    incomplete = [{"object": "incomplete", "topic": TRANSACTION_STATE, "partition": n, "reason": why}
                  for n, why in sorted(coord.incomplete.items())]
    return (incomplete, [transactional_id_object(tid, v) for tid, v in sorted(ids.items())], notes, partitions(),
            coord.findings)


def only_open(p: dict):
    """``--open``: the partition with only its producers that have a transaction open (hanging or
    not) and no completed transactions; None when it has none."""
    producers = [d for d in p["producers"] if d.get("open_txn")]
    if not producers:
        return None
    return {**p, "producers": producers, "transactions": [],
            "committed": {"count": 0, "records": 0, "bytes": 0}, "aborted": {"count": 0, "records": 0, "bytes": 0}}
