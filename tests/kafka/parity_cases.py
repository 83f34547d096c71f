"""The damage the recovery-parity suite does to a broker-written log dir, one kind per partition,
and the data it starts from (tests/kafka/test_recovery_parity.py)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from broker import DEFAULT_CONFIG

INTERVAL = int(DEFAULT_CONFIG["log.index.interval.bytes"])
# A full index rolls the segment: with 80-byte indexes, one every ~5 KB here (segment.bytes
# may not go below 1 MiB in Kafka 4).
TOPIC_CONFIG = {"segment.index.bytes": "80"}
RECORDS = 200


# -- damage, one kind per partition ----------------------------------------------------------------

def _logs(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def _middle(d: Path) -> Path:
    logs = _logs(d)
    return logs[len(logs) // 2]


def _batches(log: Path):
    from kdump.format.walk import Walker

    return list(Walker(log.read_bytes()))


def _patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def _middle_batch(log: Path):
    bs = _batches(log)
    return bs[len(bs) // 2]


def torn_tail(d, logdir):
    last = _logs(d)[-1]
    os.truncate(last, last.stat().st_size - 7)


def mid_bitflip(d, logdir):
    log = _middle(d)
    b = _middle_batch(log)
    with open(log, "r+b") as f:
        f.seek(b.position + b.size - 1)
        byte = f.read(1)[0]
        f.seek(b.position + b.size - 1)
        f.write(bytes([byte ^ 4]))


def zero_tail(d, logdir):
    with open(_logs(d)[-1], "ab") as f:
        f.write(bytes(3000))


def garbage_tail(d, logdir):
    import random

    with open(_logs(d)[-1], "ab") as f:
        f.write(random.Random(7).randbytes(200))


def absurd_length(d, logdir):
    log = _middle(d)
    _patch(log, _middle_batch(log).position + 8, (0x7FFFFF00).to_bytes(4, "big"))


def magic_3(d, logdir):
    # The magic byte is outside the v2 CRC: the broker reads the batch as v2 and keeps it.
    log = _middle(d)
    _patch(log, _middle_batch(log).position + 16, b"\x03")


def missing_index(d, logdir):
    _middle(d).with_suffix(".index").unlink()


def missing_index_mid_bitflip(d, logdir):
    # Recovered where the broker opens it (no .index), whatever the recovery point: cut there,
    # and recoverLog then finds nothing to cut in it, so the later segments stay.
    mid_bitflip(d, logdir)
    missing_index(d, logdir)


def missing_timeindex(d, logdir):
    _middle(d).with_suffix(".timeindex").unlink()


def corrupt_index(d, logdir):
    idx = _middle(d).with_suffix(".index")
    idx.write_bytes(bytes(range(7, 7 + idx.stat().st_size)))


def stale_epochs(d, logdir):
    ck = d / "leader-epoch-checkpoint"
    lines = ck.read_text().split("\n")
    entries = [ln for ln in lines[2:] if ln.strip()] + ["9 100000"]
    ck.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")


def leftover_cleaned(d, logdir):
    first = _logs(d)[0]
    shutil.copy(first, first.with_name(first.name + ".cleaned"))


def leftover_deleted(d, logdir):
    log = _middle(d)
    shutil.copy(log, log.with_name(log.name + ".deleted"))


def leftover_swap(d, logdir):
    # A cleaner's output not yet swapped in: same content as the segment it replaces.
    log = _middle(d)
    shutil.copy(log, log.with_name(log.name + ".swap"))


def orphan_index(d, logdir):
    shutil.copy(_logs(d)[0].with_suffix(".index"), d / f"{99999:020d}.index")


def corrupt_snapshot(d, logdir):
    snaps = sorted(d.glob("*.snapshot"))
    snap = snaps[len(snaps) // 2]
    snap.write_bytes(snap.read_bytes()[:10] + b"\xff" * 20)


def lagging_epochs(d, logdir):
    # A checkpoint that lags the log (never flushed): recovery assigns what the batches carry.
    (d / "leader-epoch-checkpoint").write_text("0\n0\n")


def overlap_after_clean(d, logdir):
    # The cleaner merged the first two segments into one named after the first, and the
    # broker stopped before deleting the second: both stay, overlapping.
    first, second = _logs(d)[:2]
    first.write_bytes(first.read_bytes() + second.read_bytes())


def missing_txnindex(d, logdir):
    _middle(d).with_suffix(".txnindex").unlink()


def corrupt_txnindex(d, logdir):
    # An entry ending below the segment's base: TransactionIndex.sanityCheck fails at load.
    txn = _middle(d).with_suffix(".txnindex")
    entry = (0).to_bytes(2, "big") + (1).to_bytes(8, "big") + (0).to_bytes(8, "big") * 3
    txn.write_bytes(entry + txn.read_bytes())


def nothing(d, logdir):
    pass


# -- damage for the clean-shutdown load (tests/kafka/test_clean_parity.py) ------------------------

def first_batch_flip(d, logdir):
    # A record byte of the very first batch: a CRC-checked scan ends the log at its base.
    log = _logs(d)[0]
    b = _batches(log)[0]
    _patch(log, b.position + b.size - 1, bytes([log.read_bytes()[b.position + b.size - 1] ^ 4]))


def _last_index_batch(d):
    from kdump.check.clean_load import OffsetIndexView

    log = _logs(d)[-1]
    idx = OffsetIndexView(log.with_suffix(".index").read_bytes(), int(log.stem))
    position = idx.lookup(idx.last_offset())[1]
    return log, next((b for b in _batches(log) if b.position == position), None)


def torn_at_last_index_entry(d, logdir):
    # The active segment torn inside the batch its last index entry points at.
    log, b = _last_index_batch(d)
    if b is not None:
        os.truncate(log, b.position + b.size - 3)


def garbage_active_index(d, logdir):
    idx = _logs(d)[-1].with_suffix(".index")
    idx.write_bytes(bytes(range(7, 7 + max(idx.stat().st_size, 16))))


def partial_index_entry(d, logdir):
    for ext, extra in ((".index", 5), (".timeindex", 7)):
        with open(_logs(d)[-1].with_suffix(ext), "ab") as f:
            f.write(bytes(range(1, 1 + extra)))


def stray_snapshots(d, logdir):
    # Copies of the latest snapshot at offsets no segment starts at, one below the last snapshot.
    snaps = sorted(d.glob("*.snapshot"))
    if snaps:
        top = int(snaps[-1].stem)
        for off in {top - 1, top // 2} - {int(p.stem) for p in _logs(d)}:
            if off > 0:
                shutil.copy(snaps[-1], d / f"{off:020d}.snapshot")


def absurd_length_last(d, logdir):
    log = _logs(d)[-1]
    _patch(log, _middle_batch(log).position + 8, (0x7FFFFF00).to_bytes(4, "big"))


def zero_size_mid(d, logdir):
    # A batch length of 0 in the middle of the active segment.
    log = _logs(d)[-1]
    _patch(log, _middle_batch(log).position + 8, bytes(4))


@dataclass(frozen=True)
class Case:
    name: str
    harm: object
    recovery_point: int | None = None     # None: keep the checkpointed one (the log end)
    log_start: int | None = None
    txn: bool = False
    expect: str = "kept"      # what the broker does to the .log files: kept | cut | cut_and_delete
    damage: bool = False      # kdump verify's verdict on the damaged partition (exit status 1)
    stays: bool = False       # damage the broker's recovery leaves in place (it keeps or does not look)
    finding: str | None = None  # a kind verify must report on the damaged partition


CASES = [
    Case("control", nothing),
    Case("torn_tail", torn_tail, expect="cut", damage=True),
    Case("zero_tail", zero_tail, expect="cut", damage=True),
    Case("garbage_tail", garbage_tail, expect="cut", damage=True),
    Case("mid_bitflip", mid_bitflip, recovery_point=0, expect="cut_and_delete", damage=True),
    Case("mid_bitflip_below_recovery_point", mid_bitflip, damage=True, stays=True),
    Case("absurd_length", absurd_length, recovery_point=0, expect="cut_and_delete", damage=True),
    Case("magic_3", magic_3, recovery_point=0, finding="invalid_magic", damage=True, stays=True),
    Case("missing_index", missing_index, finding="index_missing"),
    Case("missing_timeindex", missing_timeindex),
    # (the broker leaves a gap where it cut: records_missing stays)
    Case("missing_index_mid_bitflip", missing_index_mid_bitflip, recovery_point=0, expect="cut", damage=True,
         stays=True),
    Case("missing_index_mid_bitflip_below_recovery_point", missing_index_mid_bitflip, expect="cut", damage=True,
         stays=True),
    Case("corrupt_index_recovered", corrupt_index, recovery_point=0, damage=True),
    # The broker drops the epoch entry past its log end and the orphan index and starts; the files
    # show the log reached further than the segments kept, so verify says records are missing.
    Case("stale_epochs", stale_epochs, finding="records_missing", damage=True),
    Case("log_start_above_end", nothing, log_start=100000, finding="log_start_past_end", damage=True),
    Case("leftover_cleaned", leftover_cleaned, finding="leftover"),
    Case("leftover_deleted", leftover_deleted),
    Case("leftover_swap", leftover_swap),
    Case("orphan_index", orphan_index, finding="records_missing", damage=True),
    Case("corrupt_snapshot", corrupt_snapshot, finding="snapshot_invalid"),
    Case("lagging_epochs", lagging_epochs),
    Case("overlap_after_clean", overlap_after_clean, finding="offset_overlap"),     # the broker never reads it: an anomaly  # noqa: E501
    Case("txn_control", nothing, txn=True),
    Case("txn_mid_bitflip", mid_bitflip, recovery_point=0, txn=True, expect="cut_and_delete", damage=True),
    Case("txn_torn_tail", torn_tail, txn=True, expect="cut", damage=True),
    Case("txn_missing_txnindex", missing_txnindex, txn=True, damage=True, stays=True, finding="txnindex_missing"),
    Case("txn_missing_txnindex_recovered", missing_txnindex, recovery_point=0, txn=True, damage=True,
         finding="txnindex_missing"),
    Case("txn_corrupt_txnindex", corrupt_txnindex, txn=True, damage=True, finding="txnindex_offset"),
]
PLAIN = [c for c in CASES if not c.txn]
TXN = [c for c in CASES if c.txn]


def partition_of(case: Case) -> str:
    group = TXN if case.txn else PLAIN
    return f"{'txn' if case.txn else 'plain'}-{group.index(case)}"


# -- the source: a broker writes it --------------------------------------------------------------

def produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("plain", len(PLAIN), 1, topic_configs=TOPIC_CONFIG),
                         NewTopic("txn", len(TXN), 1, topic_configs=TOPIC_CONFIG)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2)
    for i in range(RECORDS):
        for p in range(len(PLAIN)):
            producer.send("plain", key=b"k%d" % i, value=b"v%d-" % i + b"x" * 100, partition=p)
        if i % 7 == 6:
            producer.flush()
    producer.flush()
    producer.close()
    tx = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="parity", acks="all")
    tx.init_transactions()
    for n in range(RECORDS // 8):
        tx.begin_transaction()
        for i in range(8):
            for p in range(len(TXN)):
                tx.send("txn", key=b"t%d" % i, value=b"y" * 100, partition=p)
        tx.flush()
        if n % 3 == 1:
            tx.abort_transaction()
        else:
            tx.commit_transaction()
    tx.close()


def set_checkpoint(path: Path, values: dict[str, int]) -> None:
    lines = path.read_text().split("\n")
    entries = {}
    for ln in lines[2:]:
        if ln.strip():
            t, p, o = ln.split()
            entries[f"{t}-{p}"] = o
    entries.update({k: str(v) for k, v in values.items()})
    body = [f"{k.rsplit('-', 1)[0]} {k.rsplit('-', 1)[1]} {v}" for k, v in entries.items()]
    path.write_text("\n".join(["0", str(len(body)), *body]) + "\n")


def missing_middle_log(d, logdir):
    # A middle segment's .log deleted by hand; its index files and snapshot stay.
    logs = _logs(d)
    if len(logs) < 3:
        raise IndexError("needs three segments")
    logs[len(logs) // 2].unlink()


def no_log_left(d, logdir):
    # Every .log deleted by hand: indexes, snapshots and checkpoints remain.
    logs = _logs(d)
    if not logs:
        raise IndexError("no segment")
    for log in logs:
        log.unlink()
