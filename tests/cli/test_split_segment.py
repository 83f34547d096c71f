"""``dump -j`` on one big segment: the segment cut into ranges at batch boundaries
(its ``.index`` when sane, else a header walk), the ranges rendered by the workers, the output
the same bytes as ``-j 1`` on stdout and on stderr, with the same exit status, damage mid-way
included (the output ends where ``-j 1`` ends it). Only ``--json`` cuts a segment; the text
view and the table read one in a single process, and are run here on a log dir, whose
partitions ``-j`` spreads.

The runs go through real file descriptors (a child process writing to files: each worker
writes its ranges' output itself) and through ``run_kdump`` (captured streams: the output
comes back to the parent).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdump.encode import build_legacy_wrapper, build_v2_batch
from kdump.format.walk import Walker
from kdump.run import pieces
from kdump.storage.levels import expand
from support.run import run_kdump, write_segment

SPLIT = "100K"
VIEWS = [("--records", "--data", "--json"), ("--records", "--data"), (), ("--records", "--json", "--encoding", "hex"),
         ("--records", "--data", "--format", "table"), ("--format", "table")]


def _batches(seed: int) -> list[bytes]:
    """600 batches of every codec; keys, values and headers from all 256 byte values; a gap of
    offsets now and then."""
    rng = random.Random(seed)
    out, offset = [], 0
    for n in range(600):
        k = rng.randrange(1, 20)
        recs = [(offset + i, 1_700_000_000_000 + offset + i, bytes(rng.randrange(256) for _ in range(rng.randrange(5))),
                 bytes(rng.randrange(256) for _ in range(rng.randrange(400))), [("h", bytes([n % 256, 0]))])
                for i in range(k)]
        out.append(build_v2_batch(recs, base_offset=offset, codec=rng.choice([0, 0, 1, 3, 4])))
        offset += k + (7 if n % 97 == 0 else 0)
    return out


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("split")
    good = write_segment(root / "good-0", _batches(1))
    assert run_kdump("index", good, "--rebuild", "-q").code == 0
    # damage mid-way: a CRC failure (the walk goes on), then a size below the minimum (it stops)
    shutil.copytree(root / "good-0", root / "damaged-0")
    damaged = root / "damaged-0" / good.name
    data = bytearray(damaged.read_bytes())
    batches = list(Walker(bytes(data)))
    crc_bad = next(b for b in batches if b.position > 300_000)
    stop = next(b for b in batches if b.position > 600_000)
    data[crc_bad.position + 70] ^= 0xFF
    data[stop.position + 8:stop.position + 12] = b"\x00\x00\x00\x05"
    damaged.write_bytes(bytes(data))
    # no index: the cuts come from a header walk
    write_segment(root / "noindex-0", _batches(2))
    # an index that passes the sanity check but points inside batches: its cuts are not used
    shutil.copytree(root / "good-0", root / "lying-0")
    index = root / "lying-0" / "00000000000000000000.index"
    raw = bytearray(index.read_bytes())
    for slot in (n for n in range(len(raw) // 8) if n % 5):
        position = int.from_bytes(raw[slot * 8 + 4:slot * 8 + 8], "big")
        raw[slot * 8 + 4:slot * 8 + 8] = (position + 1).to_bytes(4, "big")
    index.write_bytes(bytes(raw))
    write_segment(root / "small-0", _batches(3)[:5])
    write_segment(root / "legacy-0", _wrappers(4))
    return root


def _wrappers(seed: int) -> list[bytes]:
    """300 v1 wrappers of every legacy codec (no index: cut by a header walk)."""
    rng = random.Random(seed)
    out, offset = [], 0
    for n in range(300):
        k = rng.randrange(1, 20)
        inner = [(offset + i, 1_700_000_000_000 + offset + i, bytes(rng.randrange(256) for _ in range(3)),
                  bytes(rng.randrange(256) for _ in range(rng.randrange(600)))) for i in range(k)]
        out.append(build_legacy_wrapper(inner, magic=1, codec=rng.choice([1, 2, 3])))
        offset += k
    return out


def _run(out_dir: Path, name: str, *args) -> tuple[int, bytes, bytes]:
    out, err = out_dir / f"{name}.out", out_dir / f"{name}.err"
    with out.open("wb") as o, err.open("wb") as e:
        code = subprocess.run([sys.executable, "-m", "kdump", "dump", *map(str, args)], stdout=o, stderr=e).returncode
    return code, out.read_bytes(), err.read_bytes()


# Only --json cuts one segment (the text view and the table read it in one process, whatever
# -j): the JSON views on every segment; every view on the whole log dir, whose partitions -j
# spreads over its workers.
JSON_VIEWS = [v for v in VIEWS if "--json" in v]
CASES = ([(t, v) for t in ("good-0/00000000000000000000.log", "damaged-0", "noindex-0", "lying-0", "legacy-0")
          for v in JSON_VIEWS]
         + [(".", v) for v in VIEWS])


@pytest.mark.slow
@pytest.mark.parametrize("target, view", CASES, ids=[f"{t} {' '.join(v)}" for t, v in CASES])
def test_same_bytes_at_every_j(logdir, tmp_path, view, target):
    path = logdir / target
    one = _run(tmp_path, "j1", path, *view, "-j", "1", "--split-bytes", SPLIT)
    assert one[0] == (1 if target in ("damaged-0", ".") else 0), one[2][-500:]
    assert one[1]
    for jobs in (2, 3):
        assert _run(tmp_path, f"j{jobs}", path, *view, "-j", jobs, "--split-bytes", SPLIT) == one, f"-j {jobs}"
    if "table" not in view:     # the text and JSON views do not depend on the cuts at all
        assert _run(tmp_path, "whole", path, *view, "-j", "1") == one


@pytest.mark.parametrize("view", VIEWS[:3], ids=" ".join)
def test_same_output_through_captured_streams(logdir, view):
    """Where stdout is not a file the ranges' output comes back to the parent: the same text."""
    one = run_kdump("dump", logdir, *view, "-j", "1", "--split-bytes", SPLIT)
    two = run_kdump("dump", logdir, *view, "-j", "2", "--split-bytes", SPLIT)
    assert two == one and one.code == 1


def test_the_damaged_segment_ends_where_j1_ends_it(logdir, tmp_path):
    code, out, err = _run(tmp_path, "d", logdir / "damaged-0", "--records", "--json", "-j", "3",
                          "--split-bytes", SPLIT)
    assert code == 1
    positions = [json.loads(line)["position"] for line in out.splitlines()]
    assert positions == sorted(positions) and 300_000 < positions[-1] <= 600_000     # no range past the stop
    errors = [line for line in err.splitlines() if line.startswith(b"kdump: error: ")]
    assert b"invalid CRC" in errors[0] and errors[-1].endswith(b"smaller than minimum record overhead (14)")


def test_plan_cuts_big_segments_only(logdir):
    files = [(f, False) for f in expand(str(logdir), 1) if f.kind == "log"]
    units = [[fe] for fe in files]
    plan = pieces.plan(units, 100 << 10)
    by_file: dict[str, int] = {}
    for p in plan:
        for f, _, rng in p.entries:
            by_file[Path(f.path).parent.name] = by_file.get(Path(f.path).parent.name, 0) + 1
            if rng is not None:
                assert p.resumed == (not rng.first)
    assert by_file["small-0"] == 1
    assert by_file["good-0"] >= 10 and by_file["noindex-0"] >= 10 and by_file["damaged-0"] >= 10
    assert by_file["lying-0"] < by_file["good-0"]       # the entries pointing inside batches are not cuts
    assert by_file["legacy-0"] >= 5
    assert pieces.plan(units, 0) == [pieces.Piece([(f, e, None)], i, False) for i, [(f, e)] in enumerate(units)]


def test_the_cuts_of_legacy_wrappers_open_none(logdir, monkeypatch):
    """The header walk for the cuts frames wrappers without inflating them: in the parent,
    before any worker starts, that walk cost -j 2 more than it saved on v1 gzip."""
    from kdump.format import legacy

    opened = []
    monkeypatch.setattr(legacy, "decompress", lambda *a, **k: opened.append(a) or b"")
    f = next(f for f in expand(str(logdir / "legacy-0"), 1) if f.kind == "log")
    assert len(pieces.plan([[(f, True)]], 100 << 10)) >= 5
    assert opened == []
