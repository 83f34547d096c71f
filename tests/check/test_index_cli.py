"""``kdump index`` / ``kdump timeindex``: listing, --verify, --sanity, --rebuild, read-only proof.

Real broker files (fixtures/real) must list and verify clean; every planted fault is made
in a copy under tmp_path with the kdump.format encoders. DumpLogSegmentsTest #3, #4 and
#18 (kafka-reference.md §2) are ported at the end.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import struct
from pathlib import Path

import pytest

from kdump.check.broker_rule import build_indexes
from kdump.check.indexes.forward_pass import verify_indexes, verify_offset_index, verify_time_index
from kdump.check.indexes.index_file import IndexCheck
from kdump.encode import build_legacy_message, build_v2_batch
from kdump.format.index import encode_index, parse_index
from kdump.format.index_encode import max_timestamp_record_offset
from kdump.format.timeindex import encode_timeindex, parse_timeindex
from kdump.format.walk import Walker
from kdump.model import IndexEntry, TimeIndexEntry
from kdump.repair.indexes import rebuild_indexes
from support.run import GENERATED, REAL, run_kdump, snapshot_tree, write_segment  # noqa: E402

T0 = 1_700_000_000_000
PINTEREST = REAL / "pinterest__tiered-storage"
CONSUMER = "ts-consumer/src/test/resources/log-files/"


def _base(p: Path) -> int:
    return int(p.name[:20])


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _file_objects(out: str) -> list[dict]:
    return [o for o in _json_lines(out) if o["object"] == "file"]


# -- a generated segment with indexes, to plant faults in ----------------------------------------

BASE = 1000


def make_segment(directory: Path, batches: int = 40, seed: int = 7, interval: int = 1024,
                 time_offset: str = "last") -> tuple[Path, bytes]:
    """A segment of multi-record batches (timestamps jittered so a batch's max is often not its last
    record) at base offset 1000, with .index/.timeindex as LogSegment.recover writes them."""
    rng = random.Random(seed)
    out, offset, ts = [], BASE, T0
    for _ in range(batches):
        count = rng.randint(1, 6)
        recs = [(j, ts + rng.randint(-40, 60), b"k%d" % (offset + j), b"v" * rng.randint(40, 400))
                for j in range(count)]
        out.append(build_v2_batch(recs, base_offset=offset))
        offset += count
        ts += 100
    log = write_segment(directory, out, base_offset=BASE)
    buf = log.read_bytes()
    offsets, times, _ = build_indexes(buf, BASE, interval_bytes=interval, time_offset=time_offset)
    log.with_suffix(".index").write_bytes(encode_index(offsets, BASE))
    log.with_suffix(".timeindex").write_bytes(encode_timeindex(times, BASE))
    return log, buf


def _entries(log: Path):
    idx = parse_index(log.with_suffix(".index").read_bytes(), BASE).entries
    tix = parse_timeindex(log.with_suffix(".timeindex").read_bytes(), BASE).entries
    return list(idx), list(tix)


def _write_index(log: Path, entries) -> Path:
    p = log.with_suffix(".index")
    p.write_bytes(b"".join(struct.pack(">ii", o - BASE, pos) for o, pos in entries))
    return p


def _write_timeindex(log: Path, entries) -> Path:
    p = log.with_suffix(".timeindex")
    p.write_bytes(b"".join(struct.pack(">qi", ts, o - BASE) for ts, o in entries))
    return p


def _faults(r, path: Path) -> list[dict]:
    (obj,) = [o for o in _file_objects(r.out) if o["file"] == str(path)]
    return obj["findings"]


def _assert_reported(r, path: Path, kind: str, cls: str = "damage") -> dict:
    """The fault is in the JSON report with its class, and stderr has its one-line form: for
    damage an error and exit status 1; for an anomaly (accepted by a broker as it is) a note
    and exit status 0, as verify gives (--strict makes it fail: ``_assert_strict``)."""
    assert r.code == (1 if cls == "damage" else 0), (r.out, r.err)
    faults = _faults(r, path)
    hits = [f for f in faults if f["kind"] == kind]
    assert hits, faults
    f = hits[0]
    assert f["class"] == cls
    where = f"{path}:{f['position']}: " if f["position"] is not None else f"{path}: "
    if cls == "damage":
        assert f"kdump: error: {where}{f['message']}" in r.err.splitlines()
    else:
        assert f"kdump: note: {where}{f['message']} ({cls})" in r.err.splitlines()
        assert "kdump: error:" not in r.err
    assert "Traceback" not in r.err and "internal error" not in r.err
    return f


def _assert_strict(*args) -> None:
    """With --strict an anomaly fails: exit 1, an error line instead of the note."""
    r = run_kdump(*args, "--strict")
    assert r.code == 1 and "kdump: error: " in r.err and "kdump: note: " not in r.err, (r.code, r.err)


def test_generated_segment_verifies_clean(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    idx, tix = _entries(log)
    assert len(idx) > 10 and len(tix) > 10
    for cmd in ("index", "timeindex"):
        r = run_kdump(cmd, "--verify", "--json", log)
        assert r.code == 0, r.err
        (obj,) = _file_objects(r.out)
        assert obj["status"] == "ok" and obj["findings"] == [] and obj["verify"]["entries_checked"] > 10
    r = run_kdump("index", "--verify", log)
    assert "convention: last: each batch's last offset (Kafka 2.0 and later)" in r.out
    assert "gaps between entries fit index.interval.bytes" in r.out
    check = run_kdump("index", "--verify", "--json", log)
    lo, hi = _file_objects(check.out)[0]["verify"]["interval_bytes"].values()
    assert lo <= 1024 <= hi


# -- planted faults ---------------------------------------------------------------------------------

def test_fault_index_entry_mid_batch(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    idx, _ = _entries(log)
    idx[3] = IndexEntry(idx[3].offset, idx[3].position + 20)
    p = _write_index(log, idx)
    f = _assert_reported(run_kdump("index", "--verify", "--json", p), p, "index_mid_batch")
    assert f["position"] == 3 * 8 and f["offset"] == idx[3].offset
    assert "not at a batch start" in f["message"]


def test_fault_index_past_eof(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    idx, tix = _entries(log)
    p = _write_index(log, idx + [IndexEntry(idx[-1].offset + 50, len(buf) + 100)])
    f = _assert_reported(run_kdump("index", "--verify", "--json", p), p, "index_past_end")
    assert f["position"] == len(idx) * 8 and f"past the end of the log ({len(buf)} bytes)" in f["message"]
    # A time index entry past the last offset.
    t = _write_timeindex(log, tix + [TimeIndexEntry(tix[-1].timestamp + 10, tix[-1].offset + 500)])
    f = _assert_reported(run_kdump("timeindex", "--verify", "--json", t), t, "timeindex_past_end")
    assert f["offset"] == tix[-1].offset + 500


def test_fault_index_offsets_not_increasing(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    idx, tix = _entries(log)
    idx[5], idx[6] = IndexEntry(idx[6].offset, idx[5].position), IndexEntry(idx[5].offset, idx[6].position)
    p = _write_index(log, idx)
    r = run_kdump("index", "--verify", "--json", p)
    f = _assert_reported(r, p, "index_not_increasing")
    assert f["position"] == 6 * 8 and "is not greater than" in f["message"]
    # The swapped offsets are also not in the batches they point at.
    assert "index_offset_mismatch" in {x["kind"] for x in _faults(r, p)}
    tix[4], tix[5] = TimeIndexEntry(tix[4].timestamp, tix[5].offset), TimeIndexEntry(tix[5].timestamp, tix[4].offset)
    t = _write_timeindex(log, tix)
    _assert_reported(run_kdump("timeindex", "--verify", "--json", t), t, "timeindex_not_increasing")


def test_fault_timestamp_not_max_so_far(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    _, tix = _entries(log)
    # Still above the previous entry (so time does not go back), but below the log's max at that offset.
    lowered = tix[6].timestamp - 1
    assert lowered > tix[5].timestamp
    tix[6] = TimeIndexEntry(lowered, tix[6].offset)
    t = _write_timeindex(log, tix)
    f = _assert_reported(run_kdump("timeindex", "--verify", "--json", t), t, "timeindex_not_max")
    assert f["position"] == 6 * 12 and "is not the largest timestamp up to that offset" in f["message"]


def test_fault_time_going_backwards(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    _, tix = _entries(log)
    tix[8] = TimeIndexEntry(tix[7].timestamp - 500, tix[8].offset)
    t = _write_timeindex(log, tix)
    r = run_kdump("timeindex", "--verify", "--json", t)
    f = _assert_reported(r, t, "timeindex_backwards")
    assert f["position"] == 8 * 12 and "time goes backwards" in f["message"]


@pytest.mark.parametrize("cmd,slot", [("index", 8), ("timeindex", 12)])
def test_fault_truncated_last_entry(tmp_path, cmd, slot):
    log, _ = make_segment(tmp_path / "t-0")
    p = log.with_suffix("." + cmd)
    data = p.read_bytes()
    p.write_bytes(data[:-3])
    f = _assert_reported(run_kdump(cmd, "--verify", "--json", p), p, f"{cmd}_partial_entry", "anomaly")
    assert f["position"] == len(data) - slot
    assert f"not a multiple of {slot}: the last {slot - 3} bytes are a truncated entry" in f["message"]
    _assert_strict(cmd, "--verify", "--json", p)
    # Listing alone reports it too (it needs no log), and the whole entries are still listed.
    r = run_kdump(cmd, p)
    assert r.code == 0 and "truncated entry" in r.out and len(r.out.splitlines()) > 5
    assert run_kdump(cmd, p, "--strict").code == 1


def test_fault_wrong_file_size(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    # .index grown by 5 bytes: Kafka's size check fails, kdump reports a torn slot.
    p = log.with_suffix(".index")
    p.write_bytes(p.read_bytes() + b"\x00" * 5)
    _assert_reported(run_kdump("index", "--verify", "--json", p), p, "index_partial_entry", "anomaly")
    r = run_kdump("index", "--sanity", p)
    assert r.code == 1 and f"found {p.stat().st_size} bytes which is neither positive nor a multiple of 8" in r.err
    # .timeindex cut at an entry boundary: the entry a broker appends at roll/close is missing.
    t = log.with_suffix(".timeindex")
    data = t.read_bytes()
    t.write_bytes(data[:-12])
    f = _assert_reported(run_kdump("timeindex", "--verify", "--json", t), t, "timeindex_missing_final_entry",
                         "anomaly")
    assert f["position"] == len(data) - 12 and "roll" in f["message"]
    _assert_strict("timeindex", "--verify", t)


def test_fault_index_offset_outside_its_batch(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    idx, tix = _entries(log)
    batches = list(Walker(buf))
    by_pos = {b.position: b for b in batches}
    # Entry 2 holds an offset from before the batch it points at.
    idx[2] = IndexEntry(by_pos[idx[2].position].base_offset - 1, idx[2].position)
    p = _write_index(log, idx)
    f = _assert_reported(run_kdump("index", "--verify", "--json", p), p, "index_offset_mismatch")
    assert f["position"] == 16 and "is before the batch it points at" in f["message"]
    # A time index entry inside the right batch, but neither its last offset nor the record with the max.
    for i, e in enumerate(tix):
        b = next(b for b in batches if b.base_offset <= e.offset <= b.last_offset)
        rec = max_timestamp_record_offset(buf, b)
        others = [o for o in range(b.base_offset, b.last_offset) if o != rec]
        if others:
            tix[i] = TimeIndexEntry(e.timestamp, others[0])
            break
    t = _write_timeindex(log, tix)
    f = _assert_reported(run_kdump("timeindex", "--verify", "--json", t), t, "timeindex_offset_mismatch")
    assert f["position"] == i * 12 and "neither its last offset nor the record" in f["message"]


def test_fault_garbage_after_zero_tail(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    p = log.with_suffix(".index")
    p.write_bytes(p.read_bytes() + bytes(80) + struct.pack(">ii", 5, 9) + bytes(16))
    f = _assert_reported(run_kdump("index", "--verify", "--json", p), p, "index_garbage_after_tail")
    assert "after the zero-filled tail" in f["message"]


# -- what verify accepts ---------------------------------------------------------------------------

def test_pre_2_0_base_offset_convention_is_accepted_and_reported(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    by_pos = {b.position: b for b in Walker(buf)}
    idx, _ = _entries(log)
    p = _write_index(log, [(by_pos[e.position].base_offset, e.position) for e in idx])
    r = run_kdump("index", "--verify", p)
    assert r.code == 0, r.err
    assert "convention: base: each batch's base offset (Kafka before 2.0)" in r.out


def test_multi_batch_append_entry_is_accepted(tmp_path):
    """A follower (or the cleaner) indexes an append of several batches at its first batch with its
    last offset: the offset lies in a later batch than the position."""
    log, buf = make_segment(tmp_path / "t-0")
    batches = list(Walker(buf))
    idx, _ = _entries(log)
    k = next(i for i, b in enumerate(batches) if b.position == idx[3].position)
    assert batches[k + 1].position < idx[4].position
    idx[3] = IndexEntry(batches[k + 1].last_offset, batches[k].position)
    p = _write_index(log, idx)
    r = run_kdump("index", "--verify", p)
    assert r.code == 0, r.err
    assert "1 entries index a multi-batch append" in r.out
    # ...but not when the offset is only found beyond the next entry.
    nxt = next(i for i, b in enumerate(batches) if b.position == idx[4].position)
    idx[3] = IndexEntry(batches[nxt + 1].last_offset, batches[k].position)
    idx[4] = IndexEntry(batches[nxt + 2].last_offset, batches[nxt].position)
    p = _write_index(log, idx[:5])
    r = run_kdump("index", "--verify", "--json", p)
    assert r.code == 1 and "index_offset_mismatch" in {f["kind"] for f in _faults(r, p)}


def test_record_time_convention_detected(tmp_path):
    log, _ = make_segment(tmp_path / "t-0", time_offset="record")
    r = run_kdump("timeindex", "--verify", log.with_suffix(".timeindex"))
    assert r.code == 0, r.err
    assert "convention: record: the record carrying each max timestamp" in r.out
    r = run_kdump("timeindex", "--verify", make_segment(tmp_path / "u-0")[0].with_suffix(".timeindex"))
    assert "convention: last:" in r.out


def test_interval_bytes_given_to_verify(tmp_path):
    log, _ = make_segment(tmp_path / "t-0", interval=1024)
    assert run_kdump("index", "--verify", "--interval-bytes", "1024", log).code == 0
    r = run_kdump("index", "--verify", "--json", "--interval-bytes", "4096", log)
    assert r.code == 0 and {f["kind"] for f in _faults(r, log.with_suffix(".index"))} == {"index_interval"}
    _assert_strict("index", "--verify", "--json", "--interval-bytes", "4096", log)
    # Entries missing in the middle: no single interval explains the gaps; a note, not a fault.
    idx, _ = _entries(log)
    p = _write_index(log, idx[:3] + idx[8:])
    r = run_kdump("index", "--verify", p)
    assert r.code == 0 and "no single index.interval.bytes explains the gaps" in r.out


def test_verify_functions_api(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    idx = parse_index(log.with_suffix(".index").read_bytes(), BASE)
    tix = parse_timeindex(log.with_suffix(".timeindex").read_bytes(), BASE)
    o = verify_offset_index(buf, BASE, idx)
    t = verify_time_index(buf, BASE, tix)
    both = verify_indexes(buf, BASE, idx, tix)
    assert isinstance(o, IndexCheck) and o.ok and t.ok and both == (o, t)
    assert o.convention == "last" and t.convention == "last" and o.entries == len(idx.entries)
    # Findings carry the byte position in the index file and the entry's offset.
    bad = parse_index(encode_index(idx.entries[:2], BASE) + struct.pack(">ii", 99999, 10**6), BASE)
    check = verify_offset_index(buf, BASE, bad)
    assert [(f.kind, f.position) for f in check.findings] == [("index_past_end", 16)]


def test_torn_log_tail_is_reported_not_a_traceback(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    idx, _ = _entries(log)
    log.write_bytes(buf[: idx[-1].position + 30])     # the last indexed batch is torn
    r = run_kdump("index", "--verify", "--json", log.with_suffix(".index"))
    f = _assert_reported(r, log.with_suffix(".index"), "index_past_end")
    assert "past the last whole batch" in f["message"]
    assert any("readable only up to byte" in n for n in _file_objects(r.out)[0]["notes"])


@pytest.mark.parametrize("seed", range(6))
def test_random_garbage_never_raises(tmp_path, seed):
    rng = random.Random(seed)
    log, buf = make_segment(tmp_path / "t-0")
    data = bytearray(buf)
    for _ in range(20):
        data[rng.randrange(len(data))] = rng.randrange(256)
    log.write_bytes(bytes(data))
    log.with_suffix(".index").write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(200))))
    log.with_suffix(".timeindex").write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(200))))
    for cmd in ("index", "timeindex"):
        for mode in ("--verify", "--sanity"):
            r = run_kdump(cmd, mode, tmp_path / "t-0")
            assert r.code in (0, 1), r.err
            assert "Traceback" not in r.err and "internal error" not in r.err


# -- real fixtures -----------------------------------------------------------------------------------

def _real(pattern: str) -> list[Path]:
    return sorted(p for p in REAL.rglob(pattern) if p.is_file())


REAL_INDEX_FILES = (_real("*.index") + _real("*.index.swap") + _real("*.timeindex") + _real("*.timeindex.cleaned"))
# Index files whose .log was not committed to the source repository: nothing to verify against.
REAL_ORPHANS = {
    "Manny-97__end-to-end-streaming-system/kafka/data/__cluster_metadata-0/00000000000000000000.index",
    "Manny-97__end-to-end-streaming-system/kafka/data/__cluster_metadata-0/00000000000000000000.timeindex",
    "Manny-97__end-to-end-streaming-system/kafka/data/rappel_conso-0/00000000000000000000.index",
    "Manny-97__end-to-end-streaming-system/kafka/data/rappel_conso-0/00000000000000000000.timeindex",
    "pinterest__tiered-storage/ts-consumer/src/test/resources/00000000000000000000.index",
    "pinterest__tiered-storage/ts-segment-uploader/src/test/resources/log_segments/test_topic_b-0/"
    "00000000000000000000.index",
    "pinterest__tiered-storage/ts-segment-uploader/src/test/resources/log_segments/test_topic_b-0/"
    "00000000000000000000.timeindex",
    "pinterest__tiered-storage/ts-segment-uploader/src/test/resources/log_segments/test_topic_b-0/"
    "00000000000000822706.index",
    "pinterest__tiered-storage/ts-segment-uploader/src/test/resources/log_segments/test_topic_b-0/"
    "00000000000000822706.timeindex",
}


def _rel(p: Path) -> str:
    return str(p.relative_to(REAL))


def test_real_index_inventory():
    assert len(REAL_INDEX_FILES) >= 400
    assert REAL_ORPHANS <= {_rel(p) for p in REAL_INDEX_FILES}


@pytest.mark.parametrize("path", REAL_INDEX_FILES, ids=_rel)
def test_real_fixture_verifies_clean(path):
    cmd = "timeindex" if ".timeindex" in path.name else "index"
    r = run_kdump(cmd, "--verify", "--json", path)
    (obj,) = _file_objects(r.out)
    if _rel(path) in REAL_ORPHANS:
        assert r.code == 3 and obj["status"] == "unverified" and "cannot verify" in r.err
        assert obj["findings"] == []
        return
    assert r.code == 0, (r.out, r.err)
    assert obj["status"] == "ok" and obj["findings"] == [] and r.err == ""
    assert obj["verify"]["entries_checked"] == obj["entries"]


def test_real_listing_keeps_dumplogsegments_lines():
    idx = PINTEREST / CONSUMER / "test_topic_a-0/00000000000000000000.index"
    r = run_kdump("index", idx)
    assert r.code == 0
    entries = parse_index(idx.read_bytes(), 0).entries
    assert r.out.splitlines() == [f"Dumping {idx}"] + [f"offset: {e.offset} position: {e.position}" for e in entries]
    tix = idx.with_suffix(".timeindex")
    r = run_kdump("timeindex", tix)
    entries = parse_timeindex(tix.read_bytes(), 0).entries
    assert r.out.splitlines() == [f"Dumping {tix}"] + [f"timestamp: {e.timestamp} offset: {e.offset}"
                                                        for e in entries]
    # The .log names its segment; JSON has one object per entry, then one per file.
    first = parse_index(idx.read_bytes(), 0).entries[0]
    r = run_kdump("index", "--json", idx.with_suffix(".log"))
    objs = _json_lines(r.out)
    assert objs[0] == {"object": "entry", "file": str(idx), "slot": 0, "offset": first.offset,
                       "position": first.position}
    assert objs[-1]["object"] == "file" and objs[-1]["status"] == "ok" and objs[-1]["zero_tail"] is None


def test_real_partition_dir_lists_every_segment_and_txnindex():
    part = PINTEREST / CONSUMER / "test_topic_a-0"
    r = run_kdump("timeindex", "--verify-index-only", part)
    assert r.code == 0, r.err
    assert r.out.count("Dumping ") == len(list(part.glob("*.timeindex")))
    assert "timestamp:" not in r.out          # --verify-index-only: no listing
    r = run_kdump("index", GENERATED / "transactions-0")
    assert r.code == 0
    assert "version: 0 producerId: 2000 firstOffset: 3 lastOffset: 12 lastStableOffset: 13" in r.out
    assert "version: 0 producerId: 1000 firstOffset: 19 lastOffset: 22 lastStableOffset: 23" in r.out
    r = run_kdump("index", "--json", GENERATED / "transactions-0" / "00000000000000000000.txnindex")
    objs = _json_lines(r.out)
    assert objs[0] == {"object": "entry", "file": str(GENERATED / "transactions-0" / "00000000000000000000.txnindex"),
                       "slot": 0, "version": 0, "producer_id": 2000, "first_offset": 3, "last_offset": 12,
                       "last_stable_offset": 13}


def test_table_format_draws(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")        # (a narrow table folds its headings and the summary)
    log, _ = make_segment(tmp_path / "t-0")
    for cmd in ("index", "timeindex"):
        r = run_kdump(cmd, "--verify", "--entries", "--format", "table", log)
        assert r.code == 0 and "slot" in r.out and "verified" in r.out, r.err
    r = run_kdump("index", "--format", "table", GENERATED / "transactions-0")
    assert r.code == 0 and "producer" in r.out


def test_generated_fixtures_verify_clean():
    for cmd in ("index", "timeindex"):
        r = run_kdump(cmd, "--verify-index-only", "--json", *sorted(GENERATED.iterdir()))
        assert r.code == 0, r.err
        objs = _file_objects(r.out)
        assert {o["status"] for o in objs} <= {"ok", "missing"}
        assert [o["file"] for o in objs if o["status"] == "missing"] == [
            str(GENERATED / "torn-tail-0" / f"00000000000000000000.{cmd}")]


# -- --sanity: Kafka's conditions and messages --------------------------------------------------------

def test_sanity_passes_and_empty(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    for cmd in ("index", "timeindex"):
        p = log.with_suffix("." + cmd)
        r = run_kdump(cmd, "--sanity", p)
        assert r.code == 0 and r.out == f"Dumping {p}\n{p} passed sanity check.\n"
    p = log.with_suffix(".index")
    p.write_bytes(b"")
    r = run_kdump("index", "--sanity", p)
    assert r.code == 0 and r.out == f"Dumping {p}\n{p} is empty.\n"


def test_sanity_index_messages_exact(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    p = log.with_suffix(".index")
    p.write_bytes(struct.pack(">ii", 4, 100) + struct.pack(">ii", -3, 200))
    r = run_kdump("index", "--sanity", p)
    msg = (f"Corrupt index found, index file {p.resolve()} has non-zero size but the last offset is {BASE - 3} "
           f"which is less than the base offset {BASE}")
    assert r.code == 1
    assert r.err.splitlines() == [f"kdump: error: {p}:8: {msg}"]
    assert f"fault at byte 8: {msg} [index_sanity]" in r.out
    p.write_bytes(struct.pack(">ii", 4, 100) + b"\x00\x01\x02")
    r = run_kdump("index", "--sanity", p)
    assert r.err.splitlines() == [f"kdump: error: {p}:8: Index file {p.resolve()} is corrupt, found 11 bytes "
                                  f"which is neither positive nor a multiple of 8"]


def test_sanity_timeindex_messages_exact(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    t = log.with_suffix(".timeindex")
    t.write_bytes(struct.pack(">qi", T0 + 500, 3) + struct.pack(">qi", T0, -2) + b"\x07")
    r = run_kdump("timeindex", "--sanity", "--json", t)
    assert r.code == 1
    assert [f["message"] for f in _faults(r, t)] == [
        f"Corrupt time index found, time index file ({t.resolve()}) has non-zero size but the last timestamp is "
        f"{T0} which is less than the first timestamp {T0 + 500}",
        f"Corrupt time index found, time index file ({t.resolve()}) has non-zero size but the last offset is "
        f"{BASE - 2} which is less than the first offset {BASE}",
        f"Time index file {t.resolve()} is corrupt, found 25 bytes which is neither positive nor a multiple of 12"]


def test_sanity_zero_tail_false_positive_is_kafkas_and_explained(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    t = log.with_suffix(".timeindex")
    t.write_bytes(t.read_bytes() + bytes(12 * 100))
    r = run_kdump("timeindex", "--sanity", t)
    assert r.code == 1 and "has non-zero size but the last timestamp is 0 which is less than" in r.err
    assert "known false positive on an active segment" in r.out
    # kdump's own verification does not share it.
    assert run_kdump("timeindex", "--verify", t).code == 0


# -- --rebuild -----------------------------------------------------------------------------------------

# Every rolled segment (all but the last .log of a partition dir) of the real fixtures. Rebuilt with
# the defaults (index.interval.bytes 4096, time-index convention of the existing file), the broker's
# .index and .timeindex come back byte for byte EXCEPT where this table says otherwise.
ROLLED_DIRS = {
    "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test": 3,
    "pinterest__tiered-storage/ts-segment-uploader/src/test/resources/log_segments/test_topic_a-0": 30,
    "pinterest__tiered-storage/" + CONSUMER + "test_topic_a-0": 39,
    "pinterest__tiered-storage/" + CONSUMER + "test_topic_a-1": 35,
    "pinterest__tiered-storage/" + CONSUMER + "test_topic_a-2": 36,
    # Compacted __consumer_offsets: the log cleaner's output segment (cleaner-offset-checkpoint).
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-17": 1,
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-28": 1,
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39": 1,
    "getachew015__kafka-broker/data/kafka/__consumer_offsets-13": 1,
}
# (dir, base offset) -> {file: the broker behaviour that explains the difference}
REBUILD_EXCEPTIONS = {
    ("pinterest__tiered-storage/" + CONSUMER + "test_topic_a-1", 0): {
        "index": "written with a small index.interval.bytes (an entry for every batch after the first, 232 bytes "
                 "apart at the smallest), not the default 4096; --interval-bytes 100 reproduces it",
        "timeindex": "same small interval: an entry at every batch where the max timestamp grew",
    },
    ("pinterest__tiered-storage/" + CONSUMER + "test_topic_a-2", 0): {
        "index": "written with a small index.interval.bytes (entries 118 bytes apart at the smallest); "
                 "--interval-bytes 100 reproduces it",
        # its .timeindex matches: the extra entries of the small interval coincide with the 4096 ones
    },
}
# The time-index convention each set follows (detected from the existing file, then followed).
TIME_CONVENTIONS = {"pinterest__tiered-storage/" + CONSUMER + "test_topic_a-0": "record",
                    "pinterest__tiered-storage/" + CONSUMER + "test_topic_a-1": "record",
                    "pinterest__tiered-storage/" + CONSUMER + "test_topic_a-2": "record"}


def _live_logs(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def test_rolled_segment_inventory():
    for rel, count in ROLLED_DIRS.items():
        assert len(_live_logs(REAL / rel)) - 1 == count, rel
    # Every real partition dir with more than one live segment is in the table.
    dirs = {p.parent for p in REAL.rglob("*.log")}
    multi = {str(d.relative_to(REAL)) for d in dirs if len(_live_logs(d)) > 1}
    assert multi == set(ROLLED_DIRS)


@pytest.mark.parametrize("rel", sorted(ROLLED_DIRS), ids=lambda r: r.split("/")[-1])
def test_rebuild_reproduces_broker_files(tmp_path, rel):
    src = REAL / rel
    work = tmp_path / src.name
    shutil.copytree(src, work)
    for p in work.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    work.chmod(0o755)
    r = run_kdump("index", "--rebuild", "--json", work)
    assert r.code == 0, r.err
    results = {(o["file"]): o for o in _json_lines(r.out)}
    for log in _live_logs(src)[:-1]:
        base = _base(log)
        expected_diff = REBUILD_EXCEPTIONS.get((rel, base), {})
        for kind in ("index", "timeindex"):
            original = log.with_suffix("." + kind).read_bytes()
            new = (work / log.with_suffix("." + kind).name)
            res = results[str(new)]
            assert res["time_offset"] == TIME_CONVENTIONS.get(rel, "last")
            if kind in expected_diff:
                assert new.read_bytes() != original, (log, kind)
                assert res["status"] == "replaced" and Path(res["backup"]).read_bytes() == original
            else:
                assert new.read_bytes() == original, (log, kind)
                assert res["status"] == "unchanged" and res["backup"] is None


@pytest.mark.parametrize("part", ["test_topic_a-1", "test_topic_a-2"])
def test_rebuild_exceptions_explained_by_small_interval(tmp_path, part):
    src = PINTEREST / CONSUMER / part
    work = tmp_path / part
    work.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        shutil.copy(src / name, work / name)
        (work / name).chmod(0o644)
    r = run_kdump("timeindex", "--rebuild", "--interval-bytes", "100", work / "00000000000000000000.log")
    assert r.code == 0, r.err
    for kind in ("index", "timeindex"):
        name = f"00000000000000000000.{kind}"
        assert (work / name).read_bytes() == (src / name).read_bytes()
    assert not list(work.glob("*.bak"))


def test_rebuild_convention_matters(tmp_path):
    """With the leader's "record" convention detected, the consumer sets match; forcing "last" does not."""
    src = PINTEREST / CONSUMER / "test_topic_a-0"
    work = tmp_path / "test_topic_a-0"
    work.mkdir()
    for name in ("00000000000000000362.log", "00000000000000000362.index", "00000000000000000362.timeindex"):
        shutil.copy(src / name, work / name)
        (work / name).chmod(0o644)
    r = run_kdump("timeindex", "--rebuild", "--time-offset", "last", work)
    assert r.code == 0, r.err
    assert "follows the 'record' convention; writing 'last' as asked" in r.out
    t = work / "00000000000000000362.timeindex"
    assert t.read_bytes() != (src / t.name).read_bytes()
    assert (work / (t.name + ".bak")).read_bytes() == (src / t.name).read_bytes()
    # Back to the detected convention... which is now "last" (the file was rewritten): force record.
    run_kdump("timeindex", "--rebuild", "--time-offset", "record", "--no-backup", work)
    assert t.read_bytes() == (src / t.name).read_bytes()


def test_rebuild_is_atomic_with_backup(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    idx_path, tix_path = log.with_suffix(".index"), log.with_suffix(".timeindex")
    good_idx, good_tix = idx_path.read_bytes(), tix_path.read_bytes()
    bad = good_idx[:-8] + struct.pack(">ii", 1, 3)
    idx_path.write_bytes(bad)
    r = run_kdump("index", "--rebuild", "--interval-bytes", "1024", log)
    assert r.code == 0, r.err
    assert idx_path.read_bytes() == good_idx
    assert Path(str(idx_path) + ".bak").read_bytes() == bad
    assert f"rewrote {idx_path}" in r.out and f"unchanged: {tix_path}" in r.out
    assert not Path(str(tix_path) + ".bak").exists()
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".kdump-tmp")]
    assert run_kdump("index", "--verify", "--interval-bytes", "1024", log).code == 0
    # A second damage and rebuild keeps both old versions.
    idx_path.write_bytes(bad + b"\x01")
    assert run_kdump("index", "--rebuild", "--interval-bytes", "1024", log).code == 0
    assert Path(str(idx_path) + ".bak.1").read_bytes() == bad + b"\x01"
    # --no-backup keeps nothing.
    idx_path.write_bytes(bad)
    assert run_kdump("index", "--rebuild", "--interval-bytes", "1024", "--no-backup", log).code == 0
    assert not Path(str(idx_path) + ".bak.2").exists() and idx_path.read_bytes() == good_idx
    # The file keeps its mode.
    idx_path.write_bytes(bad)
    idx_path.chmod(0o640)
    assert run_kdump("index", "--rebuild", "--interval-bytes", "1024", "--no-backup", log).code == 0
    assert idx_path.stat().st_mode & 0o777 == 0o640
    assert good_tix == tix_path.read_bytes()


def test_rebuild_failure_leaves_old_file(tmp_path, monkeypatch):
    log, _ = make_segment(tmp_path / "t-0")
    idx_path = log.with_suffix(".index")
    idx_path.write_bytes(b"\x00" * 3)
    import kdump.repair.indexes as ic

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ic.os, "replace", boom)
    r = run_kdump("index", "--rebuild", log)
    assert r.code == 3 and "No space left on device" in r.err
    assert idx_path.read_bytes() == b"\x00" * 3
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".kdump-tmp")]


def test_rebuild_creates_missing_indexes_and_covers_valid_bytes(tmp_path):
    log, buf = make_segment(tmp_path / "t-0")
    expected = log.with_suffix(".index").read_bytes()
    log.with_suffix(".index").unlink()
    log.with_suffix(".timeindex").unlink()
    log.write_bytes(buf + buf[:50])              # a torn tail after the last whole batch
    r = run_kdump("index", "--rebuild", "--interval-bytes", "1024", "--json", log)
    assert r.code == 0, r.err
    objs = _json_lines(r.out)
    assert {o["status"] for o in objs} == {"created"}
    assert log.with_suffix(".index").read_bytes() == expected
    assert objs[0]["valid_bytes"] == len(buf) and objs[0]["log_size"] == len(buf) + 50
    assert "50 bytes after the last valid batch" in objs[0]["notes"][0]


def test_rebuild_refuses_symlink_outside_directory(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    outside = tmp_path / "elsewhere.index"
    outside.write_bytes(b"keep me")
    idx_path = log.with_suffix(".index")
    idx_path.unlink()
    idx_path.symlink_to(outside)
    r = run_kdump("index", "--rebuild", log)
    assert r.code == 3, r
    assert r.err == f"kdump: error: {idx_path}: is a symbolic link; kdump does not write through links\n"
    assert outside.read_bytes() == b"keep me" and idx_path.is_symlink()


@pytest.mark.parametrize("command, ext, victim", [("index", ".index", "00000000000000000012.log"),
                                                   ("timeindex", ".timeindex", "leader-epoch-checkpoint")])
def test_rebuild_never_writes_through_a_symlink_in_the_same_directory(tmp_path, command, ext, victim):
    """``.index -> 00..12.log`` emptied the other segment, ``.timeindex ->
    leader-epoch-checkpoint`` filled the checkpoint with binary. One policy for every
    writing command: a symbolic link is refused, wherever it points."""
    d = Path(shutil.copytree(GENERATED / "zstd-v2-0", tmp_path / "t-0"))
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 0\n")
    link = d / f"00000000000000000000{ext}"
    link.unlink()
    link.symlink_to(victim)
    before = (d / victim).read_bytes()
    for backup in ([], ["--no-backup"]):
        r = run_kdump(command, "--rebuild", *backup, d)
        assert r.code == 3 and r.err == f"kdump: error: {link}: is a symbolic link; kdump does not write through " \
                                        f"links\n", r
        assert (d / victim).read_bytes() == before and link.is_symlink()
    assert not [p.name for p in d.iterdir() if ".bak" in p.name or p.name.endswith(".kdump-tmp")]


def test_rebuild_api(tmp_path):
    log, _ = make_segment(tmp_path / "t-0", time_offset="record")
    result = rebuild_indexes(str(log.with_suffix(".timeindex")), 1024)
    assert result.time_offset == "record" and result.time_offset_from == "existing file"
    assert [w.status for w in result.files] == ["unchanged", "unchanged"]
    log.with_suffix(".timeindex").unlink()
    result = rebuild_indexes(str(log), 1024, backup=False)
    assert result.time_offset == "last" and result.time_offset_from == "default"
    assert [w.status for w in result.files] == ["unchanged", "created"]


# -- usage and exit status ----------------------------------------------------------------------------

def test_usage_errors(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    for args in (["--rebuild", "--verify"], ["--rebuild", "--sanity"], ["--no-backup"], ["--time-offset", "last"]):
        r = run_kdump("index", *args, log)
        assert r.code == 2, (args, r.err)
    r = run_kdump("index", log.with_suffix(".timeindex"))
    assert r.code == 2 and "use kdump timeindex" in r.err
    r = run_kdump("timeindex", tmp_path / "nope" / "00000000000000000000.timeindex")
    assert r.code == 3 and "no such file" in r.err
    r = run_kdump("index", "--time-offset", "first", "--rebuild", log)
    assert r.code == 2


def test_verify_without_log_cannot_complete(tmp_path):
    log, _ = make_segment(tmp_path / "t-0")
    log.unlink()
    r = run_kdump("index", "--verify", log.with_suffix(".index"))
    assert r.code == 3 and "cannot verify: the segment" in r.err
    assert run_kdump("index", log.with_suffix(".index")).code == 0     # listing needs no log


# -- read-only proof -------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["index", "timeindex"])
@pytest.mark.parametrize("mode", [[], ["--verify"], ["--verify-index-only"], ["--sanity"], ["--json"],
                                  ["--format", "table"], ["--verify", "--json", "--interval-bytes", "64"]])
def test_nothing_is_written_without_rebuild(tmp_path, cmd, mode):
    part = tmp_path / "logs" / "t-0"
    make_segment(part)
    second, _ = make_segment(tmp_path / "other", seed=3)
    # A second segment whose indexes are missing, as after losing them; and an orphan index.
    shutil.copy(second, part / "00000000000000005000.log")
    shutil.copy(second.with_suffix(".index"), part / "00000000000000009000.index")
    before = snapshot_tree(tmp_path / "logs")
    for target in (part, tmp_path / "logs", part / "00000000000000005000.log", part / f"00000000000000001000.{cmd}"):
        r = run_kdump(cmd, *mode, target)
        assert "Traceback" not in r.err and "internal error" not in r.err
    assert snapshot_tree(tmp_path / "logs") == before
    assert not (part / f"00000000000000005000.{cmd}").exists()
    r = run_kdump(cmd, part / "00000000000000005000.log")
    assert r.code == 0 and f"00000000000000005000.{cmd}: missing: no " in r.out


# -- DumpLogSegmentsTest ports --------------------------------------------------------------------

def dumplogsegments_fixture(directory: Path) -> Path:
    """The shared fixture: index.interval.bytes=128, 4 batches of 10/20/20/10 records, indexes
    flushed but not closed, so they keep their preallocated zero tails."""
    batches, offset = [], 0
    for count, with_key, with_value, step in [(10, True, True, 2), (20, True, False, 3), (20, False, True, 5),
                                              (10, False, False, 7)]:
        recs = [(i, T0 + step * i, f"message key {i}".encode() if with_key else None,
                 f"message value {i}".encode() if with_value else None) for i in range(count)]
        batches.append(build_v2_batch(recs, base_offset=offset, partition_leader_epoch=0))
        offset += count
    log = write_segment(directory, batches)
    offsets, times, _ = build_indexes(log.read_bytes(), 0, interval_bytes=128)
    assert len(offsets) == 3 and len(times) == 2
    log.with_suffix(".index").write_bytes(encode_index(offsets, 0) + bytes(8 * 4096))
    log.with_suffix(".timeindex").write_bytes(encode_timeindex(times, 0) + bytes(12 * 4096))
    return log


def test_dump_index_mismatches(tmp_path):
    """#3 testDumpIndexMismatches: no mismatch; the zero entries are skipped, not reported."""
    log = dumplogsegments_fixture(tmp_path / "test-0")
    idx = log.with_suffix(".index")
    r = run_kdump("index", "--verify-index-only", "--json", idx)
    assert r.code == 0 and r.err == ""
    (obj,) = _file_objects(r.out)
    assert obj["findings"] == [] and obj["entries"] == 3 and obj["zero_tail"] == {"start_slot": 3, "slots": 4096}
    r = run_kdump("index", "--verify", "--entries", idx)
    assert r.out.splitlines()[1:5] == [f"offset: {e.offset} position: {e.position}"
                                       for e in parse_index(idx.read_bytes(), 0).entries] + [
        "zero-filled preallocated tail from slot 3 (active segment or unclean shutdown): 4096 slots"]


def test_dump_time_index_errors(tmp_path):
    """#4 testDumpTimeIndexErrors: no timestamp mismatch, no out-of-order entry, no offset not found."""
    log = dumplogsegments_fixture(tmp_path / "test-0")
    r = run_kdump("timeindex", "--verify-index-only", "--json", log.with_suffix(".timeindex"))
    assert r.code == 0 and r.err == ""
    (obj,) = _file_objects(r.out)
    assert obj["findings"] == [] and obj["entries"] == 2 and obj["zero_tail"]["start_slot"] == 2


def test_dump_empty_index(tmp_path):
    """#18 testDumpEmptyIndex: a 0-byte .index prints `<path> is empty.`."""
    log = dumplogsegments_fixture(tmp_path / "test-0")
    idx = log.with_suffix(".index")
    idx.write_bytes(b"")
    r = run_kdump("index", idx)
    assert r.code == 0 and r.out == f"Dumping {idx}\n{idx} is empty.\n"
    assert run_kdump("index", "--verify", idx).code == 0


def test_all_zero_preallocated_index_has_no_entries(tmp_path):
    """An active segment's index before its first entry: zeros only, all tail (not an entry at 0)."""
    log = dumplogsegments_fixture(tmp_path / "test-0")
    idx = log.with_suffix(".index")
    idx.write_bytes(bytes(8 * 100))
    r = run_kdump("index", "--verify", "--json", idx)
    assert r.code == 0
    (obj,) = _file_objects(r.out)
    assert obj["entries"] == 0 and obj["zero_tail"] == {"start_slot": 0, "slots": 100}
    assert obj["verify"]["convention"] is None


def test_legacy_v0_segment(tmp_path):
    msgs = [build_legacy_message(i, None, b"x" * 300, magic=0) for i in range(40)]
    log = write_segment(tmp_path / "old-0", msgs)
    offsets, times, _ = build_indexes(log.read_bytes(), 0, interval_bytes=1000)
    log.with_suffix(".index").write_bytes(encode_index(offsets, 0))
    log.with_suffix(".timeindex").write_bytes(b"")
    for cmd in ("index", "timeindex"):
        r = run_kdump(cmd, "--verify", log)
        assert r.code == 0, r.err
    assert "convention: either" in run_kdump("index", "--verify", log).out
    assert re.search(r"is empty\.", run_kdump("timeindex", log).out)


def test_an_entry_at_byte_zero_is_noted_not_a_crash(tmp_path):
    """The broker never indexes a segment's first batch: no interval explains an entry at byte 0
    (this used to end in an internal error)."""
    import struct

    from kdump import encode as build

    d = tmp_path / "c-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(build.build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")]))
    (d / "00000000000000000000.index").write_bytes(struct.pack(">ii", 0, 0))
    r = run_kdump("index", "--verify", str(d / "00000000000000000000.index"))
    assert r.code == 0, r.err
    assert ("note: no index.interval.bytes explains an entry at byte 0, 0 bytes after the start of the segment "
            "(the broker never indexes the first batch)\n") in r.out
    assert run_kdump("verify", str(d)).code == 0


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_dump_words_index_tail_problems_as_verify_does(tmp_path, suffix):
    """A torn last slot and a non-zero slot after the zero tail: `dump` of the file and the
    index check give the same message at the same position (one wording, index_file)."""
    from kdump.check.indexes.index_file import file_findings, read_index_file
    from kdump.check.side_file_views import describe
    from kdump.storage.logdir import LogFile

    slot = 8 if suffix == ".index" else 12
    entry = struct.pack(">ii", 5, 100) if slot == 8 else struct.pack(">qi", 1_700_000_000_000, 5)
    p = tmp_path / f"00000000000000000000{suffix}"
    p.write_bytes(entry + bytes(slot) + entry + b"\x01\x02\x03")
    kind = suffix[1:]
    problems = describe(LogFile(str(p), kind, None, None, 0, None)).problems
    findings = file_findings(read_index_file(str(p), kind, 0))
    assert problems == [(f.message, f.position) for f in findings]
    assert [pos for _, pos in problems] == [2 * slot, 3 * slot]
    assert "non-zero slot 2" in problems[0][0] and f"not a multiple of {slot}" in problems[1][0]
