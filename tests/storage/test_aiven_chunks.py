"""Aiven's chunked ``.log`` objects read as the dump reads them (kdump.storage.aiven_chunks'
ChunkMap: chunks detransformed into memory as the walk asks, freed behind it): the same batches
and records as the segment on local disk, whatever falls on a chunk boundary, in -j ranges cut
at the ``.indexes`` object's offset index, and a corrupt chunk as the located error it was."""

from __future__ import annotations

import json

import pytest

from kdump.check.broker_rule import encode_indexes
from kdump.encode import build_v2_batch, encode_snapshot
from kdump.errors import InputError
from kdump.format import walk
from kdump.storage import mapped
from kdump.storage.aiven_chunks import ChunkMap
from kdump.storage.aiven_keys import load_manifest
from kdump.storage.aiven_store import AivenStore
from kdump.storage.logdir import LOG, LogFile
from kdump.storage.mapped import MappedFile
from kdump.storage.record_reader import SegmentReader
from kdump.storage.split import cuts
from support.aiven import rsa_key, write_segment
from support.run import run_kdump

TID = "T" * 22
SID = "S" * 22


def _log() -> bytes:
    """~2 MB (more than mapped.READ_BELOW): batches of 1-3 records, a few far larger than a chunk,
    one larger than a walk's ask (aiven_chunks.STEP)."""
    out, offset = [], 0
    for i in range(500):
        size = 300000 if i == 250 else 30000 if i % 60 == 7 else 200 + (i * 137) % 2500
        n = 1 + i % 3
        out.append(build_v2_batch([(j, 1000 + j, b"k%d" % (offset + j), bytes([65 + i % 26]) * size)
                                   for j in range(n)], base_offset=offset))
        offset += n
    return b"".join(out)


LOG_BYTES = _log()


def _store(root, chunk: int, compression: bool = True, key=None, log: bytes = LOG_BYTES):
    index, timeindex = encode_indexes(log, 0)
    write_segment(root / f"t-{TID}" / "0", f"{0:020d}-{SID}", {
        ".log": log, ".index": index, ".timeindex": timeindex, ".snapshot": encode_snapshot([]),
        ".leader_epoch_checkpoint": b"0\n1\n0 0\n"}, chunk, compression=compression, key=key)


def _segment(root, ring=None) -> LogFile:
    store = AivenStore(str(root), ring)
    log = store.segment_log(store.segments("t", TID, 0)[SID])
    assert log is not None and log.size == len(LOG_BYTES)
    return LogFile(log.path, LOG, "t", 0, 0, None)


def _batches(f: LogFile, span=None) -> list:
    reader = SegmentReader(f, records=True, span=span)
    out = [(item.batch.base_offset, item.batch.crc_valid, [(r.key, r.value) for r in item.records])
           for item in reader]
    assert reader.stop is None and (span is None or span[1] is None or reader.reached)
    return out


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    d = tmp_path_factory.mktemp("local")
    (d / f"{0:020d}.log").write_bytes(LOG_BYTES)
    return _batches(LogFile(str(d / f"{0:020d}.log"), LOG, "t", 0, 0, None))


# 5000: chunk boundaries inside batches, batches across six chunks, a short last chunk;
# 4096 * 32: a few chunks, each holding many batches
@pytest.mark.parametrize("chunk", [5000, 4096 * 32])
@pytest.mark.parametrize("compression", [True, False])
def test_the_dump_reads_the_segment(tmp_path, local, chunk, compression):
    assert len(LOG_BYTES) % chunk       # a short last chunk
    _store(tmp_path, chunk, compression)
    f = _segment(tmp_path)
    with MappedFile(f.path, lazy=True) as m:
        assert isinstance(m.buf, ChunkMap)      # read in memory as walked, not spooled
    assert _batches(f) == local


def test_encrypted_chunks(tmp_path, local):
    key, ring = rsa_key(tmp_path)
    _store(tmp_path / "store", 5000, key=key)
    assert _batches(_segment(tmp_path / "store", str(ring))) == local


def test_ranges_cut_at_the_offset_index(tmp_path, local):
    """-j's ranges: cut where the .indexes object's offset index says batches start, just past a
    chunk's start; each range's walk reaches the next cut, and together they are the segment."""
    _store(tmp_path, 5000)
    f = _segment(tmp_path)
    found = [c.position for c in cuts(f, len(LOG_BYTES), 64 << 10)]
    assert len(found) > 5
    starts = [0] + found
    pieces = []
    for start, stop in zip(starts, found + [None]):
        pieces += _batches(f, (start, stop))
    assert pieces == local


def test_chunks_freed_behind_the_walk(tmp_path, monkeypatch):
    """Memory stays flat: what lies well behind the walk is freed, and read again (a second
    walk from the start) it is detransformed again, the same bytes."""
    monkeypatch.setattr(mapped, "FOLLOW_BEHIND", 64 << 10)
    monkeypatch.setattr(walk, "FOLLOW_STEP", 16 << 10)
    _store(tmp_path, 5000)
    f = _segment(tmp_path)
    with MappedFile(f.path, lazy=True) as m:
        buf = m.buf
        most = [0]
        follow = buf.follow

        def watched(pos):
            follow(pos)
            most[0] = max(most[0], sum(buf._ready))

        monkeypatch.setattr(buf, "follow", watched, raising=False)
        first = [(b.base_offset, b.crc_valid) for b in walk.Walker(buf)]
        assert buf._ready[0] == 0                       # freed
        assert most[0] < (64 << 10) + (16 << 10) + 3 * 5000 + (900 << 10)     # (the big batch, thrice)
        again = [(b.base_offset, b.crc_valid) for b in walk.Walker(buf)]
    assert first == again and all(ok for _, ok in first) and len(first) == 500


def _stored_chunk(root, n: int):
    path = root / f"t-{TID}" / "0" / f"{0:020d}-{SID}.log"
    c = load_manifest(str(path).replace(".log", ".rsm-manifest")).chunks[n]
    return path, c


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_corrupt_chunk_is_located(tmp_path, encrypted):
    key, ring = rsa_key(tmp_path) if encrypted else (None, None)
    root = tmp_path / "store"
    _store(root, 5000, key=key)
    path, c = _stored_chunk(root, 150)
    body = bytearray(path.read_bytes())
    body[c.transformed_position + (c.transformed_size // 2 if encrypted else 0)] ^= 0xFF   # (zstd: its magic)
    path.write_bytes(bytes(body))
    f = _segment(root, None if ring is None else str(ring))
    seen = []
    with pytest.raises(InputError) as e:
        for item in SegmentReader(f, records=True):
            seen.append(item.batch.position)
    assert e.value.file == str(path) and e.value.position == c.transformed_position
    assert ("fails its AES-GCM tag check" if encrypted else "does not decompress") in e.value.message
    assert seen and max(seen) < c.original_position + c.original_size   # the batches before it came


def _partition(tmp_path, chunk: int):
    """A tiered partition of one Aiven segment and a 1-batch local tail; a local copy of both."""
    from support.tiered import TOPIC_ID, offload

    src = tmp_path / "src"
    src.mkdir()
    (src / f"{0:020d}.log").write_bytes(LOG_BYTES)
    tail_base = 1000
    tail = build_v2_batch([(0, 0, b"tail", b"tail record")], base_offset=tail_base, partition_leader_epoch=3)
    local = tmp_path / "local" / "t-0"
    local.mkdir(parents=True)
    (local / f"{0:020d}.log").write_bytes(LOG_BYTES)
    (local / f"{tail_base:020d}.log").write_bytes(tail)
    logdir = tmp_path / "logs"
    done = offload("t", [src / f"{0:020d}.log"], tail_base, logdir, tmp_path / "rsm")
    (logdir / "t-0" / f"{tail_base:020d}.log").write_bytes(tail)
    for stem, log, side in done:
        write_segment(tmp_path / "aiven" / f"t-{TOPIC_ID}" / "0", stem, {".log": log.read_bytes(), **side}, chunk,
                      compression=True)
    return local, logdir / "t-0", tmp_path / "aiven"


def _rows(text: str) -> list:
    rows = [json.loads(line) for line in text.splitlines()]
    return [{k: v for k, v in r.items() if k != "file"} for r in rows if r.get("object") == "batch"]


def test_dump_in_ranges_is_the_local_dump(tmp_path):
    local, part, aiven = _partition(tmp_path, 5000)
    want = run_kdump("dump", "--records", "--json", "-j", "1", str(local))
    got = run_kdump("dump", "--records", "--json", "-j", "2", "--split-bytes", "64KiB", str(part),
                    "--remote-storage", str(aiven), "--remote-layout", "aiven")
    assert got.code == want.code == 0, got.err
    assert _rows(got.out) == _rows(want.out) and len(_rows(want.out)) == 501


def test_dump_of_a_corrupt_chunk(tmp_path):
    """The error line names the object and the chunk's byte, with the exit status of bad input."""
    _, part, aiven = _partition(tmp_path, 5000)
    path = next((aiven).rglob("*.log"))
    c = load_manifest(str(path).replace(".log", ".rsm-manifest")).chunks[40]
    body = bytearray(path.read_bytes())
    body[c.transformed_position] ^= 0xFF        # its zstd magic
    path.write_bytes(bytes(body))
    r = run_kdump("dump", "--records", "--json", str(part), "--remote-storage", str(aiven), "--remote-layout", "aiven")
    assert r.code == InputError("").exit_code
    assert f"{path}" in r.err and f"the chunk at byte {c.transformed_position} does not decompress" in r.err


def test_a_seek_uses_the_offset_index_piece(tmp_path, local):
    """--offset on an Aiven segment seeks with its .indexes object's offset index."""
    from kdump.storage.record_reader import Filters

    _store(tmp_path, 5000)
    reader = SegmentReader(_segment(tmp_path), records=True, filters=Filters(start_offset=700))
    got = [item.batch.base_offset for item in reader]
    assert reader.seek_note and reader.seek_note.startswith("seeked to position") and reader.start_position > 0
    assert got == [b[0] for b in local if b[0] + len(b[2]) > 700]
