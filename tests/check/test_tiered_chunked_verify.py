"""``verify`` of an Aiven segment reads its chunks into memory as its checks ask (the dump's
ChunkMap: the CRC walk, the scan, its resync and the index checks each detransform what they
read, and again what they look back at once it was freed), never into a local copy on disk:
the findings are those of the same checks over a local copy of the segment, damage or none."""

from __future__ import annotations

import struct
import tempfile

import pytest

from kdump.check import resync, scan_runs
from kdump.check.broker_rule import encode_indexes
from kdump.check.tiered import check_partition
from kdump.encode import build_v2_batch, encode_snapshot
from kdump.format import walk
from kdump.state.remote_log import RemoteSegmentMeta
from kdump.storage import mapped, spool, views
from kdump.storage.aiven_chunks import ChunkMap
from kdump.storage.aiven_store import AivenStore
from support.aiven import write_segment

SID, TID = "S" * 22, "T" * 22
BASE = 100
STEM = f"{BASE:020d}-{SID}"


def _log(regress_at: int | None = None) -> tuple[bytes, int]:
    """~1.3 MB of batches of 1-4 records (more than mapped.READ_BELOW); ``regress_at``: that
    batch's offsets go back below the previous one's (CRC-valid: the scan's cut and resync)."""
    out, offset = [], BASE
    for i in range(400):
        n = 1 + i % 4
        base = offset - 3 if i == regress_at else offset
        value = bytes([65 + i % 26]) * (300 + i * 37 % 3000)
        out.append(build_v2_batch([(j, 1000 + i * 10 + (j * 7) % 5, b"k%d" % j, value) for j in range(n)],
                                  base_offset=base))
        offset = base + n
    return b"".join(out), offset - 1


def _files(damage: str) -> tuple[dict[str, bytes], int]:
    log, last = _log(200 if damage == "regression" else None)
    index, timeindex = encode_indexes(log, BASE)
    if damage == "index":           # an entry far past the log
        index = index[:16] + struct.pack(">ii", 30, 10 ** 9) + index[24:]
    if damage == "timeindex":       # early entries naming a batch's first record: decoded once the walk is far on
        slots = [timeindex[i:i + 12] for i in range(0, len(timeindex), 12)]
        for k in (1, 2, 3):
            ts, rel = struct.unpack(">qi", slots[k])
            slots[k] = struct.pack(">qi", ts, rel - 1)
        timeindex = b"".join(slots)
    return {".log": log, ".index": index, ".timeindex": timeindex, ".snapshot": encode_snapshot([]),
            ".leader_epoch_checkpoint": b"0\n1\n0 0\n"}, last


def _verify(root, damage: str) -> list:
    files, last = _files(damage)
    write_segment(root / f"t-{TID}" / "0", STEM, files, 5000, compression=True)
    meta = RemoteSegmentMeta(SID, "t", TID, 0, BASE, last, len(files[".log"]), True, 1, 5)
    found = check_partition(AivenStore(str(root)), {SID: meta}, [], "t", 0, read=True).findings
    return [(loc.path.replace(str(root), ""), loc.finding.kind, loc.finding.position, loc.finding.message)
            for loc in found]


@pytest.fixture
def small_steps(monkeypatch):
    """Little kept behind a reader and little asked at a time: every check frees, asks and looks back."""
    monkeypatch.setattr(mapped, "FOLLOW_BEHIND", 32 << 10)
    monkeypatch.setattr(walk, "FOLLOW_STEP", 8 << 10)
    monkeypatch.setattr(scan_runs, "PLAIN_RUN_BYTES", 40 << 10)
    monkeypatch.setattr(resync, "SEARCH_SPAN", 20 << 10)


@pytest.mark.parametrize("damage", ["none", "regression", "index", "timeindex"])
def test_verify_reads_the_chunks_in_memory(tmp_path, monkeypatch, small_steps, damage):
    spooled_root, chunked_root = tmp_path / "spooled", tmp_path / "chunked"
    with monkeypatch.context() as m:       # the local copy (the layout's buffer for a walk left out)
        m.setattr(views, "_streamers", {})
        spooled = _verify(spooled_root, damage)

    def written(*args, **kwargs):
        raise AssertionError("verify wrote a local copy")

    maps = []
    made = ChunkMap.__new__

    def counted(cls, *args):
        maps.append(made(cls, *args))
        return maps[-1]

    monkeypatch.setattr(tempfile, "mkstemp", written)
    monkeypatch.setattr(spool.Spool, "__init__", written)
    monkeypatch.setattr(ChunkMap, "__new__", counted)
    chunked = _verify(chunked_root, damage)
    assert chunked == spooled
    assert maps             # read through the chunk map
    assert bool(chunked) == (damage != "none")


def _damaged_log(damage: str) -> bytes:
    log, _ = _log(200 if damage == "regression" else None)
    body = bytearray(log)
    if damage == "crc":             # a flipped byte mid-segment: the cut, then the resync past it
        body[len(body) // 2] ^= 0xFF
    if damage == "zeros":           # a run of zeros inside, then batches again
        body[len(body) // 3:len(body) // 3 + 200000] = bytes(200000)
    return bytes(body)


@pytest.mark.parametrize("damage", ["none", "regression", "crc", "zeros"])
def test_the_scan_is_the_local_copys(tmp_path, monkeypatch, small_steps, damage):
    """The scan itself (its report: the cut, the intact batches found past it), read through the
    chunk map, against the same bytes in a local file."""
    from kdump.check.scan import scan_file

    log = _damaged_log(damage)
    local = tmp_path / f"{BASE:020d}.log"
    local.write_bytes(log)
    want = scan_file(str(local), base_offset=BASE)
    write_segment(tmp_path / "store" / f"t-{TID}" / "0", STEM, {".log": log}, 5000, compression=True)
    store = AivenStore(str(tmp_path / "store"))
    remote = store.segment_log(store.segments("t", TID, 0)[SID])
    assert remote is not None
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: pytest.fail("a local copy"))
    got = scan_file(remote.path, base_offset=BASE)
    assert (got.findings, got.valid_bytes, got.intact_beyond, got.batches, got.last_offset) == \
        (want.findings, want.valid_bytes, want.intact_beyond, want.batches, want.last_offset)
    assert bool(want.findings) == (damage != "none") and (damage in ("none", "regression") or want.intact_beyond)
