"""Helpers for the Spark tests (and the local export tests): fixture roots, generated
segments with offset indexes, and the CLI's own view of the records for comparison."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
from pathlib import Path

from kdump.encode import build_v2_batch
from kdump.format.index import encode_index
from kdump.storage.logdir import parse_partition_dir
from kdump.storage.names import BOOTSTRAP_CHECKPOINT

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
GENERATED = FIXTURES / "generated"
SEGMENT_NAME = re.compile(r"\.(log|checkpoint)(\.(deleted|cleaned|swap))?$")
T0 = 1_700_000_000_000


def fixture_roots() -> list[str]:
    """PATHs that together cover every segment under fixtures/: log dirs, or the directory
    itself when it holds segments but is not named like a partition."""
    roots = set()
    for root, _, files in os.walk(FIXTURES):
        if any(SEGMENT_NAME.search(f) and not f.endswith("-checkpoint") for f in files):
            parent = os.path.dirname(root) if parse_partition_dir(os.path.basename(root)) else root
            roots.add(parent)
    return sorted(roots)


def run_cli(*args: str) -> tuple[int, str, str]:
    from support.run import run_kdump

    r = run_kdump(*args)
    return r.code, r.out, r.err


def cli_records(paths: list[str]) -> dict[str, list[tuple]]:
    """``kdump dump --records --data --json`` as {partition dir: [(segment, offset, key, value)]}."""
    _, out, _ = run_cli("dump", "--records", "--data", "--json", "--encoding", "base64", "--no-auto-decode", *paths)
    rows: dict[str, list[tuple]] = {}
    for line in out.splitlines():
        batch = json.loads(line)
        path = os.path.abspath(batch["file"])
        if os.path.basename(path) == BOOTSTRAP_CHECKPOINT:
            continue    # the log dir's KRaft bootstrap records: dump shows them, no partition holds them
        for r in batch.get("records") or ():
            key = None if r["key"] is None else base64.b64decode(r["key"])
            value = None if r["value"] is None else base64.b64decode(r["value"])
            rows.setdefault(os.path.dirname(path), []).append((os.path.basename(path), r["offset"], key, value))
    return rows


def digest(rows: list[tuple]) -> tuple[int, str]:
    h = hashlib.sha256()
    for segment, offset, key, value in sorted(rows, key=lambda r: (r[0], r[1], r[2] or b"", r[3] or b"")):
        h.update(f"{segment}|{offset}|".encode())
        h.update(b"-" if key is None else key.hex().encode())
        h.update(b"|")
        h.update(b"-" if value is None else value.hex().encode())
        h.update(b"\n")
    return len(rows), h.hexdigest()


def make_segment(directory: Path, *, batches: int, base_offset: int = 0, seed: int = 1,
                 index_interval: int = 4096) -> Path:
    """A v2 segment of mixed batches (none/gzip/lz4/zstd, some headers and null keys) with a
    broker-style ``.index`` (one entry per ``index_interval`` bytes, last offset of the batch)."""
    rnd = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    entries = []
    last_entry_at = 0
    offset = base_offset
    for i in range(batches):
        n = rnd.choice((1, 5, 20, 60))
        recs = []
        for j in range(n):
            key = None if rnd.random() < 0.1 else b"k%d" % rnd.randrange(10_000)
            value = rnd.randbytes(rnd.randint(0, 300)) if rnd.random() < 0.5 else b"v" * rnd.randint(1, 200)
            headers = [("h", b"x" * rnd.randint(0, 8)), ("n", None)] if rnd.random() < 0.1 else []
            recs.append((j, T0 + offset + j, key, value, headers))
        if len(data) - last_entry_at > index_interval:
            entries.append((offset + n - 1, len(data)))
            last_entry_at = len(data)
        data += build_v2_batch(recs, base_offset=offset, codec=rnd.choice((0, 0, 1, 3, 4)),
                               producer_id=7, producer_epoch=0, base_sequence=offset % 1000,
                               partition_leader_epoch=1)
        offset += n
    log = directory / f"{base_offset:020d}.log"
    log.write_bytes(bytes(data))
    (directory / f"{base_offset:020d}.index").write_bytes(encode_index(entries, base_offset))
    return log


def next_offset(log: Path) -> int:
    from kdump.format.walk import Walker

    last = None
    for b in Walker(log.read_bytes()):
        last = b.last_offset
    return (last or 0) + 1
