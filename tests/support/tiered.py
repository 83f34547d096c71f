"""A tiered partition built without a broker: segments offloaded to a LocalTieredStorage tree
and the ``__remote_log_metadata`` records that list them (COPY_SEGMENT_STARTED, then
COPY_SEGMENT_FINISHED), written with kdump's encoder and tests/decoders/kafka_wire's writers
over the message specs (RemoteLogSegmentMetadataRecord, ...UpdateRecord). The broker-written
tiered partition is tests/kafka/test_tiered.py's; this one is for stores a broker cannot
write here (hdfs://) and for the bench's big segments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "decoders"))

TOPIC_ID = "Uj5wn_FqTXirEASvVZRY1w"
# (a Uuid's last base64 character holds 2 bits: the ids differ earlier)
SEGMENT_IDS = [f"surWMNpmXk5bl_Ry5tk{c}EA" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]
EPOCH = 3
LEADER_EPOCHS = f"0\n1\n{EPOCH} 0\n".encode()


def metadata_records(topic: str, segments: list[tuple[str, int, int, int]]) -> list[bytes]:
    """The values of COPY_SEGMENT_STARTED and COPY_SEGMENT_FINISHED of each (segment id,
    start offset, end offset, size) of ``topic``'s partition 0, leader epoch ``EPOCH``."""
    from kafka_wire import blob, count, i8, i32, i64, string, tags, uuid, uvarint

    def framed(api_key: int, body: bytes) -> bytes:
        return uvarint(1) + uvarint(api_key) + uvarint(0) + body

    def seg_id(sid: str) -> bytes:
        return string(topic, True) + uuid(TOPIC_ID) + i32(0) + tags() + uuid(sid) + tags()

    out = []
    for sid, start, end, size in segments:
        epochs = count(1, True) + i32(EPOCH) + i64(start) + tags()
        out.append(framed(0, seg_id(sid) + i64(start) + i64(end) + i32(1) + i64(0) + i64(0) + epochs + i32(size)
                          + blob(None, True) + i8(0) + tags({0: b"\x01"})))      # txnIndexEmpty
        out.append(framed(1, seg_id(sid) + i32(1) + i64(0) + blob(None, True) + i8(1) + tags()))
    return out


def offload(topic: str, logs: list[Path], next_offset: int, logdir: Path, rsm: Path,
            link: bool = False) -> list[tuple[str, Path, dict[str, bytes]]]:
    """``logs`` (a partition's segments in offset order; ``next_offset``:
    the offset after the last) as remote segments: a LocalTieredStorage tree under ``rsm``
    (its ``rsm.config.dir``; hard links to the segments with ``link``; their indexes as a
    broker's recovery writes them) and the metadata
    partition in ``logdir``, with the partition dir's leader-epoch-checkpoint. (The segment
    stem, its .log, its side files) of each, for other layouts."""
    from kdump.check.broker_rule import encode_indexes
    from kdump.encode import build_v2_batch, encode_snapshot
    from kdump.storage.mapped import MappedFile

    part = rsm / "kafka-tiered-storage" / f"{topic}-0-{TOPIC_ID}"
    part.mkdir(parents=True)
    (logdir / f"{topic}-0").mkdir(parents=True, exist_ok=True)
    (logdir / f"{topic}-0" / "leader-epoch-checkpoint").write_bytes(LEADER_EPOCHS)
    bases = [int(p.name[:20]) for p in logs] + [next_offset]
    done, segments = [], []
    for i, log in enumerate(logs):
        stem = f"{bases[i]:020d}-{SEGMENT_IDS[i]}"
        if link:
            os.link(log, part / f"{stem}.log")
        else:
            (part / f"{stem}.log").write_bytes(log.read_bytes())
        with MappedFile(str(log)) as m:
            index, timeindex = encode_indexes(m.buf, bases[i])      # as the broker's recovery writes them
        side = {".index": index, ".timeindex": timeindex, ".snapshot": encode_snapshot([]),
                ".leader_epoch_checkpoint": LEADER_EPOCHS}
        for suffix, data in side.items():
            (part / f"{stem}{suffix}").write_bytes(data)
        done.append((stem, log, side))
        segments.append((SEGMENT_IDS[i], bases[i], bases[i + 1] - 1, log.stat().st_size))
    # LogManager checkpoints a tiered log's start offset whatever its local segments
    # (remoteLogEnabled), which a broker then takes over the local ones.
    start = logdir / "log-start-offset-checkpoint"
    lines = start.read_text().split("\n")[2:] if start.exists() else []
    lines = [ln for ln in lines if ln.strip() and not ln.startswith(f"{topic} 0 ")] + [f"{topic} 0 {bases[0]}"]
    start.write_text("\n".join(["0", str(len(lines)), *lines]) + "\n")
    meta = logdir / "__remote_log_metadata-0"
    meta.mkdir()
    records = [(i, 0, None, value) for i, value in enumerate(metadata_records(topic, segments))]
    (meta / f"{0:020d}.log").write_bytes(build_v2_batch(records))
    return done
