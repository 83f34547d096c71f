"""``_speedups.clean_segment_files`` (kdump/check/clean_segment.py: the usual segment's scan and
index checks in one C call) against the Python path it stands in for.

Every partition dir is checked twice by ``check_directory``, verify's own entry: as it runs
(the usual segments through ``clean_segment``) and with ``clean_segment`` refusing every
segment (the scanner and the index checks in full). The reports must be identical, field for
field and type for type. Inputs: every fixture dir under several settings (index intervals
on and off batch boundaries, a maximum message size that refuses batches), and copies damaged
in the segment (a bit, a length, a cut, a tail of zeros) and in the index files (an entry
moved, a slot cut, a file emptied or removed), each checked both ways. The count proves that
the C path took a share of the fixture segments (the comparison is not vacuous).
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from kdump import _accel

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)

from test_speedups_scan import strict  # noqa: E402

from kdump.check import partition as partition_mod  # noqa: E402
from kdump.check.clean_segment import clean_segment  # noqa: E402
from kdump.check.partition import VerifyOptions, check_directory  # noqa: E402
from kdump.format.walk import Walker  # noqa: E402
from kdump.storage import logdir as K  # noqa: E402
from kdump.storage.mapped import READ_BELOW  # noqa: E402
from support.damage import FIXTURES, flip_bit, set_length, truncate_at, write_at  # noqa: E402
from support.run import fixture_logs  # noqa: E402

DIRS = sorted({os.path.dirname(p) for p in fixture_logs()})


class Counting:
    """``clean_segment`` as verify calls it, counting the segments it took; ``refuse``: none."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse, self.taken, self.asked = refuse, 0, 0

    def __call__(self, *args):
        self.asked += 1
        if self.refuse:
            return None
        got = clean_segment(*args)
        self.taken += got is not None
        return got


def observe(directory: str, opts: VerifyOptions):
    files = K.partition_files(directory)
    reports = check_directory(directory, files, opts)
    return [(strict(r.to_dict()), strict(vars(r.scan)) if r.scan is not None else None, r.size) for r in reports]


def both(directory, monkeypatch, **options) -> Counting:
    """The dir's reports with and without the C path, which must be equal; the C path's count."""
    fast = Counting()
    monkeypatch.setattr(partition_mod, "clean_segment", fast)
    with_c = observe(str(directory), VerifyOptions(**options))
    monkeypatch.setattr(partition_mod, "clean_segment", Counting(refuse=True))
    without = observe(str(directory), VerifyOptions(**options))
    assert with_c == without, directory
    return fast


def _settings(directory: str) -> list[dict]:
    out = [{}, {"index_interval_bytes": 0}, {"index_interval_bytes": 1}, {"index_interval_bytes": 37},
           {"max_message_size": 700}]
    logs = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    first = next(iter(Walker(open(os.path.join(directory, logs[0]), "rb").read())), None) if logs else None
    if first is not None:       # intervals landing exactly on batch boundaries (the "> interval" edge)
        out += [{"index_interval_bytes": k * first.size} for k in (1, 2, 3)]
    return out


def test_every_fixture_dir_reports_the_same_both_ways(monkeypatch):
    asked = taken = 0
    for d in DIRS:
        directory = str(FIXTURES / d)
        for options in _settings(directory):
            c = both(directory, monkeypatch, **options)
            asked, taken = asked + c.asked, taken + c.taken
    # (not a vacuous proof: the C path took a good share of the segments)
    assert asked > 200 and taken > asked // 8, (asked, taken)


def _copy(src: str, dest) -> str:
    shutil.copytree(src, dest)
    for root, _, files in os.walk(dest):
        for n in files:
            os.chmod(os.path.join(root, n), 0o644)
    return str(dest)


def _clean_dirs() -> list[str]:
    """Fixture dirs whose every segment the C path takes as they are (the damage then matters)."""
    out = []
    for d in DIRS:
        directory = str(FIXTURES / d)
        logs = [f for f in K.partition_files(directory) if f.kind == K.LOG and f.leftover is None]
        if logs and all(clean_segment(f.path, f.base_offset, None, None, 1 << 20, 4096) for f in logs):
            out.append(directory)
    return out


CLEAN = _clean_dirs()


def _damages(directory: str, rng: random.Random):
    """(label, a function damaging a copy of ``directory``): in the segment, then its indexes."""
    logs = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    log = logs[0]
    size = os.path.getsize(os.path.join(directory, log))
    positions = sorted({0, 8, 11, 16, 17, 21, 57, 61, size - 1, *(rng.randrange(size) for _ in range(4))})
    for pos in positions:
        yield f"bit {pos}", lambda d, pos=pos: flip_bit(os.path.join(d, log), pos, rng.randrange(8))
    yield "length", lambda d: set_length(os.path.join(d, log), 0, 5)
    yield "cut", lambda d: truncate_at(os.path.join(d, log), size - 3)
    yield "zeros", lambda d: write_at(os.path.join(d, log), size, bytes(40))
    stem = log[:-4]
    for ext in ("index", "timeindex"):
        p = stem + "." + ext
        if not os.path.exists(os.path.join(directory, p)):
            continue
        n = os.path.getsize(os.path.join(directory, p))
        yield f"{ext} removed", lambda d, p=p: os.unlink(os.path.join(d, p))
        yield f"{ext} emptied", lambda d, p=p: truncate_at(os.path.join(d, p), 0)
        if n:
            yield f"{ext} slot cut", lambda d, p=p, n=n: truncate_at(os.path.join(d, p), n - 1)
            yield f"{ext} bit", lambda d, p=p, n=n: flip_bit(os.path.join(d, p), rng.randrange(n), rng.randrange(8))
            yield f"{ext} slot appended", lambda d, p=p, n=n: write_at(os.path.join(d, p), n, b"\x00\x00\x00\x07" * 3)


@pytest.mark.parametrize("directory", CLEAN[:12], ids=lambda d: os.path.relpath(d, FIXTURES))
def test_damaged_copies_report_the_same_both_ways(directory, tmp_path, monkeypatch):
    rng = random.Random(directory)
    for i, (label, damage) in enumerate(_damages(directory, rng)):
        d = _copy(directory, tmp_path / f"c{i}" / os.path.basename(directory))
        damage(d)
        for options in ({}, {"index_interval_bytes": 1}):
            both(d, monkeypatch, **options)


def test_the_c_path_refuses_what_it_does_not_read(tmp_path):
    """Above READ_BELOW (mapped, not read), a file that is not regular, one that is gone."""
    src = next(d for d in CLEAN if os.path.exists(os.path.join(d, "00000000000000000000.log")))
    d = _copy(src, tmp_path / os.path.basename(src))
    log = os.path.join(d, "00000000000000000000.log")
    assert clean_segment(log, 0, None, None, 1 << 20, 4096) is not None
    assert clean_segment(os.path.join(d, "gone.log"), 0, None, None, 1 << 20, 4096) is None
    assert clean_segment(d, 0, None, None, 1 << 20, 4096) is None       # a directory
    assert clean_segment(log, 0, os.path.join(d, "gone.index"), None, 1 << 20, 4096) is None
    with open(log, "ab") as f:
        f.truncate(READ_BELOW + 1)
    assert clean_segment(log, 0, None, None, 1 << 20, 4096) is None
    assert all(clean_segment(log, b, None, None, 1 << 20, 4096) is None for b in (-1, 1 << 63))


def test_without_the_accelerator_nothing_is_taken(tmp_path):
    src = CLEAN[0]
    log = sorted(f for f in K.partition_files(src) if f.kind == K.LOG)[0]
    was = _accel.use(False)
    try:
        assert clean_segment(log.path, log.base_offset, None, None, 1 << 20, 4096) is None
    finally:
        _accel.use(was)


def test_a_segment_scanned_alone_reports_the_same_both_ways(monkeypatch):
    """``VerifyOptions.scan`` (recover's plan scans each segment so): the one call, or the scanner."""
    taken = 0
    for rel in fixture_logs():
        for f in K.partition_files(str(FIXTURES / os.path.dirname(rel))):
            if f.kind != K.LOG or f.path != str(FIXTURES / rel):
                continue
            for options in ({}, {"index_interval_bytes": 1}, {"max_message_size": 700}):
                opts = VerifyOptions(**options)
                fast = Counting()
                monkeypatch.setattr(partition_mod, "clean_segment", fast)
                with_c = strict(vars(opts.scan(f)))
                monkeypatch.setattr(partition_mod, "clean_segment", Counting(refuse=True))
                assert with_c == strict(vars(opts.scan(f))), rel
                taken += fast.taken
    assert taken > 100
