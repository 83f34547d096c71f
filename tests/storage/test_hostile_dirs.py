"""Hostile directories: many segments, symlink loops, oversized indexes, control
characters in names, temporary files of killed runs in a quarantine.

Costs are counted (sorts, scans), never timed; bench/ measures time.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pytest

from kdump.check import partition as crosscheck  # noqa: E402
from kdump.check.partition import VerifyOptions, check_directory  # noqa: E402
from kdump.check.scan import ScanReport  # noqa: E402
from kdump.storage.logdir import partition_files  # noqa: E402
from support.damage import FIXTURES, copy_tree, run_kdump  # noqa: E402

# -- verify is linear in segments per partition -------------------------------------------

def _empty_segments(d: Path, n: int) -> None:
    d.mkdir(parents=True)
    for i in range(n):
        os.close(os.open(d / f"{i * 10:020d}.log", os.O_CREAT | os.O_WRONLY, 0o644))


def _count_verify(d: Path, monkeypatch) -> tuple[int, int, int]:
    """(reports, sorts of the segments, scans) of a whole-directory verify."""
    sorts = scans = 0
    real_order = crosscheck.in_offset_order

    def counted_order(logs, done):
        nonlocal sorts
        sorts += 1
        return real_order(logs, done)

    def counted_scan(self, f):
        nonlocal scans
        scans += 1          # an empty segment holding one offset: each has a predecessor to compare
        report = ScanReport(f.path, 0, f.base_offset, first_offset=f.base_offset, last_offset=f.base_offset)
        return contextlib.nullcontext((report, None))

    monkeypatch.setattr(crosscheck, "in_offset_order", counted_order)
    monkeypatch.setattr(VerifyOptions, "scanned", counted_scan)
    reports = check_directory(str(d), partition_files(str(d)), VerifyOptions())
    assert all(not r.findings for r in reports)
    return len(reports), sorts, scans


def test_verify_sorts_once_and_scans_each_segment_once(tmp_path, monkeypatch):
    """``_segment_checks`` re-sorted every segment once per segment
    (10,000 segments took 65 s, 100,000 never finished)."""
    counts = {}
    for n in (1_000, 100_000):
        _empty_segments(tmp_path / f"t-{n}", n)
        counts[n] = _count_verify(tmp_path / f"t-{n}", monkeypatch)
    assert counts == {1_000: (1_000, 1, 1_000), 100_000: (100_000, 1, 100_000)}


def test_a_real_verify_of_many_empty_segments_reports_each_once(tmp_path):
    d = tmp_path / "t-0"
    _empty_segments(d, 2_000)
    r = run_kdump("verify", "--json", d)
    assert r.code == 0 and len(r.out.splitlines()) == 2_000


# -- a symlink loop is one located error, and the rest is read ----------------------------

def _looped(tmp_path: Path) -> tuple[Path, Path]:
    d = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path / "logs")
    (d / "a").symlink_to("b")
    (d / "b").symlink_to("a")
    loop = d / "00000000000000000050.log"
    loop.symlink_to(loop.name)
    return d, loop


LOOP = "cannot read: Too many levels of symbolic links"


@pytest.mark.parametrize("args", [["verify"], ["verify", "--truncate"], ["dump"], ["info"], ["index"],
                                  ["index", "--rebuild"], ["recover"], ["recover", "--apply", "--yes"]])
def test_a_symlink_loop_is_one_located_error(tmp_path, args):
    """``a -> b``, ``b -> a`` or ``X.log -> X.log`` ended every command
    with ``internal error: OSError: [Errno 40]`` before any valid segment was shown."""
    d, loop = _looped(tmp_path)
    for target in (d, d.parent):
        r = run_kdump(*args, "--json", target) if args[0] != "index" or "--rebuild" not in args \
            else run_kdump(*args, target)
        assert "internal error" not in r.err and "Traceback" not in r.err, r.err
        # (info's exit status for an unreadable file is its own)
        assert r.code == {"index": 0, "info": r.code}.get(args[0] if "--rebuild" not in args else "", 3), r
        errors = [line for line in r.err.splitlines() if LOOP in line]
        assert len(errors) <= 1 and all(line == f"kdump: error: {loop}: {LOOP}" for line in errors), r.err
        if args[0] != "index" or "--rebuild" in args:
            assert errors or any(LOOP in line and str(loop) in line for line in r.out.splitlines()), r
        # the valid segments are still read
        assert any(x in r.out + r.err for x in ("00000000000000000012", '"segments":2', '"log_end_offset":20')), r


def test_verify_reports_the_loop_alone(tmp_path):
    import json

    d, loop = _looped(tmp_path)
    r = run_kdump("verify", "--json", d)
    rows = {Path(o["file"]).name: o for o in map(json.loads, r.out.splitlines())}
    assert r.code == 3 and len(rows) == 7
    assert rows[loop.name]["status"] == "unreadable" and rows[loop.name]["findings"][0]["message"] == LOOP
    assert {o["status"] for n, o in rows.items() if n != loop.name} == {"ok"}


# -- an oversized index reports itself alone; the rest is checked and repaired -----------

def test_an_oversized_index_does_not_drag_its_neighbours_down(tmp_path):
    """With a 300 MB ``.index`` verify called the 12-byte ``.timeindex``
    beside it unreadable too, and ``verify --truncate`` then left that ``.timeindex`` pointing
    past the new end of the log (``recover --apply`` did rebuild it)."""
    import json

    from support.damage import damage_middle, make_partition

    d = make_partition(tmp_path)
    damage_middle(d)
    for base in (0, 9):
        with open(d / f"{base:020d}.index", "r+b") as f:
            f.truncate(300 << 20)               # sparse: no disk space
    r = run_kdump("verify", "--json", d)
    rows = {Path(o["file"]).name: o for o in map(json.loads, r.out.splitlines())}
    unreadable = sorted(n for n, o in rows.items() if o["status"] == "unreadable")
    assert unreadable == [f"{0:020d}.index", f"{9:020d}.index"]
    assert rows[f"{0:020d}.timeindex"]["status"] == "ok"
    assert {f["kind"] for f in rows[f"{9:020d}.timeindex"]["findings"]} == {"timeindex_past_end"}
    r = run_kdump("verify", "--truncate", d)
    assert r.code == 3 and f"kdump: rebuilt {d / f'{9:020d}.timeindex'}: 1 entry from the log" in r.err, r.err
    rows = {Path(o["file"]).name: o for o in map(json.loads, run_kdump("verify", "--json", d).out.splitlines())}
    assert sorted(n for n, o in rows.items() if o["status"] != "ok") == unreadable


# -- a rerun removes every temporary file a killed run left, quarantine included ---------

def _temps(root: Path) -> list[str]:
    return sorted(os.path.join(dp, n) for dp, _, names in os.walk(root) for n in names if n.endswith(".kdump-tmp"))


def _split_quarantine(d: Path) -> tuple[dict[str, bytes], set[tuple[str, bytes]]]:
    """(files outside the quarantine directories, {(name, bytes)} of those inside any of them).
    A quarantine copy's ``.N`` suffix (a second copy of one name in the same directory, e.g. a
    swap's index that recovery then rewrites) depends on which run made it: not compared."""
    live, kept = {}, set()
    for dp, dirs, names in os.walk(d):
        rel = os.path.relpath(dp, d)
        for n in names:
            data = Path(dp, n).read_bytes()
            if rel.startswith("kdump-quarantine-"):
                kept.add((re.sub(r"\.\d+$", "", n.split(".kdump-tmp")[0]), data))
            else:
                live[os.path.join(rel, n)] = data
    return live, kept


def test_killed_at_every_step_of_apply_with_the_default_quarantine(tmp_path, monkeypatch):
    """A kill during the quarantine copy left ``kdump-quarantine-T1/…
    .kdump-tmp``; the rerun made ``kdump-quarantine-T2`` and never removed it. Every step of
    ``recover --apply`` is interrupted in turn; after a rerun no temporary file is left
    anywhere and the partition is what an uninterrupted run leaves."""
    from kdump.repair import recover as recovery
    from support.damage import messy_partition, run_killed_at

    src = messy_partition(tmp_path / "src")
    ref = copy_tree(src, tmp_path / "ref")
    assert run_kdump("recover", "--apply", "--yes", ref).code == 1
    reference = _split_quarantine(ref)
    n, temp_in_quarantine = 1, 0
    while True:
        d = copy_tree(src, tmp_path / f"k{n}")
        monkeypatch.setattr(recovery, "timestamp", lambda: "T1")       # the rerun's quarantine is another one
        code = run_killed_at(n, ["recover", "--apply", "--yes", str(d)])
        assert code in (99, 1), code
        temp_in_quarantine += any("kdump-quarantine-T1" in p for p in _temps(d))
        monkeypatch.setattr(recovery, "timestamp", lambda: "T2")
        r = run_kdump("recover", "--apply", "--yes", d)
        assert r.code in (0, 1), r.err
        assert _temps(d) == [], f"killed at step {n}"
        assert [p.name for p in d.iterdir() if p.name.startswith("kdump-quarantine-") and not any(p.iterdir())] == []
        live, kept = _split_quarantine(d)
        assert live == reference[0] and kept >= reference[1], f"killed at step {n}"
        if code != 99:
            break
        n += 1
    assert temp_in_quarantine >= 2       # kills landed in quarantine copies, not only in the partition


def test_recover_names_a_symlinked_index_not_its_quarantine_copy(tmp_path):
    """The error named the copy in the quarantine instead of the link."""
    from kdump.format.index import encode_index
    from support.damage import batches, damage_middle, make_partition

    d = make_partition(tmp_path)
    log, cut = damage_middle(d)
    index = d / f"{9:020d}.index"
    # An entry for the batch the cut removes: the index must be rewritten (one already equal
    # to what recovery writes is left alone, link or not).
    (d / "real.index").write_bytes(encode_index([(batches(log)[1].base_offset, cut)], 9))
    index.unlink()
    index.symlink_to("real.index")
    before = (d / "real.index").read_bytes()
    r = run_kdump("recover", "--apply", "--yes", "-q", d)
    assert r.code == 3 and r.err == f"kdump: error: {index}: is a symbolic link; kdump does not write through links\n"
    assert index.is_symlink() and (d / "real.index").read_bytes() == before


# -- control characters in names never split or colour a human-readable line -------------

HOSTILE_NAME = "t\x1b[31m\r\n\x07\x9b-0"


def _escaped(text: str) -> str:
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in text)


@pytest.mark.parametrize("args", [["verify", "--format", "text"], ["verify", "--format", "table"],
                                  ["verify", "--truncate", "--format", "text"], ["dump", "--format", "text"],
                                  ["index", "--format", "text"], ["index", "--format", "table"],
                                  ["recover", "--format", "text"], ["recover", "--format", "table"],
                                  ["recover", "--apply", "--yes", "--format", "text"], ["info", "--format", "text"]])
def test_control_characters_are_escaped_in_every_human_readable_line(tmp_path, args):
    """A newline in a path split the one-line error; the same in verify's
    report lines and the saved/truncated notes. Escaped as \\xNN; JSON keeps the name exact."""
    import json

    from support.damage import append_garbage

    d = copy_tree(FIXTURES / "generated" / "zstd-v2-0", tmp_path / "logs")
    d = d.rename(d.parent / HOSTILE_NAME)
    append_garbage(d / "00000000000000000012.log", 300, 3)
    bad = d / "x\n\x1b]0;pwned\x07.txt"          # a name kdump does not read: one error line
    bad.write_bytes(b"")
    r = run_kdump(*args, bad, d)
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err
    for line in (r.out + r.err).splitlines():
        assert not any(c in line for c in "\x1b\r\x07\x9b"), repr(line)
    errors = r.err.splitlines()
    assert all(line.startswith("kdump: ") for line in errors), errors
    why = ("recover works on directories (a partition or a log dir)" if args[0] == "recover" else
           "not a file kdump reads (expected a .log, .index, .timeindex, .txnindex, .snapshot, KRaft .checkpoint, "
           "checkpoint or metadata file, by name)")
    assert errors[0] == f"kdump: error: {_escaped(str(bad))}: {why}"
    assert _escaped(HOSTILE_NAME) in r.out + r.err
    if "--truncate" in args or "--apply" in args:
        assert any(line.startswith("kdump: truncated ") and _escaped(HOSTILE_NAME) in line for line in errors), errors
    if args[0] == "verify":
        rows = [json.loads(line) for line in run_kdump("verify", "--json", d).out.splitlines()]
        assert {os.path.dirname(o["file"]) for o in rows} == {str(d)}
