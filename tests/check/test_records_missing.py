"""``records_missing``: records the files show were written but no ``.log`` holds.

Each evidence kind on a copy of a real broker's partition (fixtures/broker/all-shapes/rolled-0:
segments 0, 32, ... 224, offsets 0..239, a snapshot at every roll and at 240), in a log dir
of its own so that only the evidence a test plants is there.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.run import run_kdump

ROLLED = Path(__file__).resolve().parents[2] / "fixtures" / "broker" / "all-shapes" / "rolled-0"
TAIL = ": a broker starts without them and no reader will see these records"


def seg(base: int, ext: str = ".log") -> str:
    return f"{base:020d}{ext}"


@pytest.fixture
def part(tmp_path) -> Path:
    d = tmp_path / "logdir" / "rolled-0"
    shutil.copytree(ROLLED, d)
    for p in d.iterdir():
        os.chmod(p, 0o644)
    return d


def missing(out: str) -> list[tuple[str, int | None, str]]:
    """(file name, offset, message) of each records_missing finding of ``verify --json``."""
    return [(os.path.basename(o["file"]), f["offset"], f["message"]) for o in map(json.loads, out.splitlines())
            for f in o["findings"] if f["kind"] == "records_missing"]


def test_the_fixture_misses_nothing(part):
    r = run_kdump("verify", "--json", part)
    assert r.code == 0 and missing(r.out) == []


def test_a_middle_log_deleted(part):
    # First report: it said "ok" for every file and exited 0.
    (part / seg(96)).unlink()
    r = run_kdump("verify", "--format", "text", part)
    assert r.code == 1
    lines = r.out.splitlines()
    at = lines.index(f"{part}/{seg(96, '.index')}: damaged, 56 bytes")
    assert lines[at + 1:at + 3] == [
        "  orphan_index at offset 96: no segment has this base offset: the broker deletes orphan indexes at startup",
        f"  records_missing at offset 96: offsets 96..127 are missing (32 offsets): {seg(64)} ends at 95, "
        f"{seg(128)} starts at 128; {seg(96)} is gone, its .index and .timeindex remain (last index entry: "
        f"offset 127){TAIL}"]
    assert sum("records_missing" in line for line in lines) == 1
    assert r.err == ("kdump: verified 33 files (7 segments, 37.6 kB): 32 ok, 1 damaged, 0 torn tail, "
                     "0 unreadable\n")
    j = run_kdump("verify", "--json", part)
    assert j.code == 1
    [obj] = [o for o in map(json.loads, j.out.splitlines()) if o["status"] != "ok"]
    assert obj["file"].endswith(seg(96, ".index")) and obj["status"] == "damaged"
    assert obj["findings"][1] == {"kind": "records_missing", "class": "damage", "position": None, "offset": 96,
                                  "message": lines[at + 2][len("  records_missing at offset 96: "):]}


def test_the_table_shows_it(part, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    (part / seg(96)).unlink()
    r = run_kdump("verify", "--format", "table", part)
    assert r.code == 1
    assert "records_missing at offset 96: offsets 96..127 are missing (32 offsets)" in " ".join(r.out.split())
    assert seg(96, ".index") in r.out


def test_info_shows_it(part):
    (part / seg(96)).unlink()
    r = run_kdump("info", "--format", "text", part)
    assert r.code == 1
    assert (f"kdump: error: {part}/{seg(96, '.index')}: records_missing: offsets 96..127 are missing (32 offsets): "
            f"{seg(64)} ends at 95, {seg(128)} starts at 128; {seg(96)} is gone, its .index and .timeindex remain "
            f"(last index entry: offset 127){TAIL}\n") in r.err
    assert run_kdump("info", ROLLED).code == 0


def test_info_reads_a_log_dirs_checkpoints_once_a_run(tmp_path, monkeypatch):
    """A broker's checkpoints list every partition of the log dir: read once a partition, they
    made ``info`` of 5,000 partitions take minutes. Once a run, and each partition still judged
    against them (the last one's records past the end are records_missing)."""
    from kdump.check import side_file_views

    logs = tmp_path / "logs"
    parts = [f"t-{i}" for i in range(12)]
    for p in parts:
        shutil.copytree(ROLLED, logs / p)
    # The log dir's checkpoints: the last partition's log start is past its log end.
    last = max(int(n[:20]) for n in os.listdir(ROLLED) if n.endswith(".log"))
    lines = [f"t {p.split('-')[1]} 0" for p in parts[:-1]] + [f"t {len(parts) - 1} 100000"]
    (logs / "log-start-offset-checkpoint").write_text(f"0\n{len(lines)}\n" + "\n".join(lines) + "\n")
    (logs / "recovery-point-offset-checkpoint").write_text(f"0\n{len(lines)}\n" + "\n".join(lines) + "\n")
    read = []
    table = side_file_views.offset_table
    monkeypatch.setattr(side_file_views, "offset_table",
                        lambda path, *a, **k: read.append(path) or table(path, *a, **k))
    r = run_kdump("info", "-j", "1", "--format", "text", logs)
    assert sorted(read) == sorted(set(read)) and len(read) == 2, read
    assert r.code == 1 and f"{logs}/t-11" in r.err and "records_missing" in r.err and last < 100000
    assert f"{logs}/t-10" not in r.err
    read.clear()        # the timeline checks each partition as verify does: the same one reading
    r = run_kdump("info", "--timeline", "-j", "1", "--json", logs)
    assert sorted(read) == sorted(set(read)) and len(read) == 2, read
    assert r.code == 1


def test_no_log_at_all(part):
    # Second report: "ok" beside log_missing, exit 0.
    for p in part.glob("*.log"):
        p.unlink()
    r = run_kdump("verify", "--format", "text", part)
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0] == f"{part}/{seg(0, '.index')}: damaged, 56 bytes"
    assert lines[2].startswith("  log_missing (anomaly): ")
    assert lines[3].startswith("  records_missing at offset 0: offsets 0..239 are missing (240 offsets): no .log "
                               f"holds them; {seg(0)} is gone, its .index and .timeindex remain (last index entry: "
                               "offset 31); ")
    assert r.err.endswith(": 25 ok, 1 damaged, 0 torn tail, 0 unreadable; 1 anomaly (states a broker accepts)\n")


def test_the_last_log_deleted_the_snapshots_show_how_far(part):
    (part / seg(224)).unlink()
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(224, ".index"), 224,
                               f"offsets 224..239 are missing (16 offsets): the log ends at 224; {seg(224)} is "
                               f"gone, its .index and .timeindex remain (last index entry: offset 239); the producer "
                               f"snapshot {seg(240, '.snapshot')} was taken at log end 240{TAIL}")]


def test_a_producer_snapshot_past_the_end(part):
    for ext in (".log", ".index", ".timeindex"):
        (part / seg(224, ext)).unlink()
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(240, ".snapshot"), 224,
                               f"offsets 224..239 are missing (16 offsets): the log ends at 224; the producer "
                               f"snapshot {seg(240, '.snapshot')} was taken at log end 240{TAIL}")]


def test_a_leader_epoch_entry_past_the_end(part):
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 300\n")
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [("leader-epoch-checkpoint", 240,
                               f"offsets 240..299 are missing (60 offsets): the log ends at 240; the "
                               f"leader-epoch-checkpoint has an epoch starting at 300{TAIL}")]


def test_an_index_entry_past_the_end(part):
    # The last segment cut at a batch boundary: no torn batch, but its .index names later offsets.
    log = part / seg(224)
    log.write_bytes(log.read_bytes()[:725])       # the first of its 4 batches (offsets 224..227)
    (part / seg(240, ".snapshot")).unlink()
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    [(name, offset, message)] = missing(r.out)
    assert (name, offset) == (seg(224, ".index"), 228)
    assert message.startswith("offsets 228..23") and f"{seg(224, '.index')} has an entry for offset 23" in message



@pytest.mark.parametrize("garbled", [False, True])
def test_an_index_not_the_brokers_is_no_evidence(part, garbled):
    """Entries past the data in an index whose entries inside it are not the broker's (here one
    points inside a batch) show no records written; the broker's own entries do."""
    import struct

    log = part / seg(224)
    log.write_bytes(log.read_bytes()[:1450])      # two of its 4 batches (offsets 224..231)
    for name in (seg(240, ".snapshot"), seg(224, ".timeindex")):
        (part / name).unlink()
    first = (226 - 224, 100) if garbled else (231 - 224, 725)
    entries = [first, (235 - 224, 1450), (239 - 224, 2175)]
    (part / seg(224, ".index")).write_bytes(b"".join(struct.pack(">ii", o, pos) for o, pos in entries))
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    kinds = {f["kind"] for o in map(json.loads, r.out.splitlines()) for f in o["findings"]}
    assert "index_past_end" in kinds
    assert ("index_mid_batch" in kinds) is garbled
    assert [(name, offset) for name, offset, _ in missing(r.out)] == ([] if garbled else [(seg(224, ".index"), 232)])

@pytest.mark.parametrize("name, what", [("recovery-point-offset-checkpoint", "the recovery point"),
                                        ("replication-offset-checkpoint", "the high watermark"),
                                        ("log-start-offset-checkpoint", "the log start offset"),
                                        ("cleaner-offset-checkpoint", "the cleaner's offset")])
def test_a_log_dir_checkpoint_past_the_end(part, name, what):
    (part.parent / name).write_text("0\n2\nother 0 9999\nrolled 0 500\n")
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(224), 240, f"offsets 240..499 are missing (260 offsets): the log ends at 240; "
                                              f"{what} in {name} is 500{TAIL}")]


def test_a_checkpoint_at_the_end_is_fine(part):
    (part.parent / "recovery-point-offset-checkpoint").write_text("0\n1\nrolled 0 240\n")
    assert run_kdump("verify", part).code == 0


def test_a_gap_between_two_segments_that_no_log_holds(part):
    for ext in (".log", ".index", ".timeindex", ".snapshot"):
        (part / seg(96, ext)).unlink()
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(128), 96, f"offsets 96..127 are missing (32 offsets): {seg(64)} ends at 95, "
                                             f"{seg(128)} starts at 128{TAIL}")]


def test_a_gap_the_cleaner_explains(part):
    for ext in (".log", ".index", ".timeindex", ".snapshot"):
        (part / seg(96, ext)).unlink()
    (part.parent / "cleaner-offset-checkpoint").write_text("0\n1\nrolled 0 200\n")
    r = run_kdump("verify", "--json", part)
    assert r.code == 0 and missing(r.out) == []


def test_an_emptied_segment_is_the_cleaners_work(part):
    # An inactive segment holding no record: the broker rolls only by appending to the next one,
    # so it is what the cleaner left of a segment it emptied, not a loss.
    for ext in (".log", ".index", ".timeindex"):
        (part / seg(96, ext)).unlink()
    (part / seg(96)).write_bytes(b"")
    r = run_kdump("verify", "--json", part)
    assert r.code == 0 and missing(r.out) == []


def test_an_emptied_segment_with_evidence_inside_is_a_loss(part):
    # The same empty segment, but its index still names offset 127: the records were written.
    (part / seg(96)).write_bytes(b"")
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert [(name, offset) for name, offset, _ in missing(r.out)] == [(seg(96, ".index"), 96)]


def test_real_compacted_partitions_miss_nothing():
    fixtures = ROLLED.parents[1]
    for d in (fixtures / "all-shapes" / "compacted-0", fixtures / "cleaner-crash" / "compacted-crash-0",
              fixtures.parent / "generated" / "compacted-0"):
        r = run_kdump("verify", "--json", d)
        assert missing(r.out) == [], d


def test_groups_and_verify_share_the_rule(part):
    from kdump.check.lost_records import orphan_bases
    from kdump.state.source import Partition, orphan_segments
    from kdump.storage.logdir import partition_files

    (part / seg(96)).unlink()
    (part / seg(160)).rename(part / (seg(160) + ".deleted"))      # being deleted: not lost
    assert orphan_segments(Partition("rolled", 0, str(part))) == [96] == list(orphan_bases(partition_files(str(part))))


@pytest.fixture
def lone(part) -> Path:
    """rolled-0 cut to its last segment and that segment's index files alone: the usual partition."""
    for p in part.iterdir():
        if p.name not in (seg(224), seg(224, ".index"), seg(224, ".timeindex")):
            p.unlink()
    return part


@pytest.mark.parametrize("name, what", [("recovery-point-offset-checkpoint", "the recovery point"),
                                        ("cleaner-offset-checkpoint", "the cleaner's offset")])
def test_one_segment_and_a_log_dir_checkpoint(lone, name, what):
    """The one-segment path judges the log dir's checkpoints as the general one: at the log
    end nothing, past it the span; a snapshot beside it is evidence too."""
    (lone.parent / name).write_text("0\n1\nrolled 0 240\n")
    r = run_kdump("verify", "--json", lone)
    assert r.code == 0 and missing(r.out) == []
    (lone.parent / name).write_text("0\n1\nrolled 0 241\n")
    r = run_kdump("verify", "--json", lone)
    assert missing(r.out) == [(seg(224), 240, f"offsets 240..240 are missing (1 offset): the log ends at 240; "
                                              f"{what} in {name} is 241{TAIL}")]
    (lone.parent / name).unlink()
    (lone / seg(250, ".snapshot")).write_bytes(b"")
    assert [m[:2] for m in missing(run_kdump("verify", "--json", lone).out)] == [(seg(250, ".snapshot"), 240)]


def _first_segment_gone(part: Path) -> None:
    for ext in (".log", ".index", ".timeindex"):
        (part / seg(0, ext)).unlink()


def test_the_first_segment_deleted(part):
    # The leader-epoch-checkpoint still starts epoch 0 at offset 0: retention would have moved it.
    _first_segment_gone(part)
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(32), 0, f"offsets 0..31 are missing (32 offsets): the first segment, {seg(32)}, "
                                           f"starts at 32; the leader-epoch-checkpoint's first epoch starts at 0 (a "
                                           f"broker moves it with the log start offset){TAIL}")]


def test_the_first_segment_removed_by_retention_is_fine(part):
    # What a broker leaves after retention deleted it: the first epoch starts at the new log start.
    _first_segment_gone(part)
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 32\n")
    r = run_kdump("verify", "--json", part)
    assert r.code == 0 and missing(r.out) == []


def _first_segment_being_deleted(part: Path) -> None:
    for ext in (".log", ".index", ".timeindex"):
        (part / seg(0, ext)).rename(part / (seg(0, ext) + ".deleted"))


def test_the_first_segment_being_deleted_before_the_epochs_moved_is_fine(part):
    # Killed after retention renamed it, before the scheduler wrote the epochs moved to 32.
    _first_segment_being_deleted(part)
    r = run_kdump("verify", "--json", part)
    assert missing(r.out) == []


def test_a_first_segment_deleted_by_hand_beside_a_deletion_under_way(part):
    # Retention deleted segment 0 (renamed, the epochs moved to 32); 32 was then deleted by hand.
    _first_segment_being_deleted(part)
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 32\n")
    for ext in (".log", ".index", ".timeindex"):
        (part / seg(32, ext)).unlink()
    r = run_kdump("verify", "--json", part)
    assert r.code == 1
    assert missing(r.out) == [(seg(64), 32, f"offsets 32..63 are missing (32 offsets): the first segment, "
                                            f"{seg(64)}, starts at 64; the leader-epoch-checkpoint's first epoch "
                                            f"starts at 32 (a broker moves it with the log start offset){TAIL}")]


@pytest.mark.parametrize("name", ["log-start-offset-checkpoint", "cleaner-offset-checkpoint"])
def test_the_first_segment_gone_is_not_judged_where_a_checkpoint_explains_it(part, name):
    # A log start in the checkpoint (a tiered log, or DeleteRecords); a compacted log, whose
    # cleaner may have emptied its head: the epochs do not say where the log began.
    _first_segment_gone(part)
    (part.parent / name).write_text("0\n1\nrolled 0 10\n")
    r = run_kdump("verify", "--json", part)
    assert missing(r.out) == []


ALL_SHAPES = ROLLED.parent


@pytest.fixture
def logdir(tmp_path) -> Path:
    d = tmp_path / "all-shapes"
    shutil.copytree(ALL_SHAPES, d)
    return d


def test_a_partition_dir_deleted(logdir):
    # The log dir's checkpoints list every partition it holds (LogManager rewrites them after a
    # topic's deletion renames its dir): an entry without its dir names records that were there.
    shutil.rmtree(logdir / "rolled-0")
    r = run_kdump("verify", "--json", logdir)
    assert r.code == 1
    assert missing(r.out) == [("recovery-point-offset-checkpoint", None,
                               "offsets below 240 are missing: the log dir has no rolled-0 directory; the recovery "
                               "point in recovery-point-offset-checkpoint is 240; the high watermark in "
                               f"replication-offset-checkpoint is 240{TAIL}")]


def test_a_partition_dir_being_deleted_is_fine(logdir):
    # What a topic deletion leaves until its delay has passed: the dir renamed, <topic>-<p>.<id>-delete.
    (logdir / "rolled-0").rename(logdir / "rolled-0.0123456789abcdef0123456789abcdef-delete")
    r = run_kdump("verify", "--json", logdir)
    assert missing(r.out) == []


def test_an_empty_partition_listed_without_its_dir_is_fine(logdir):
    shutil.rmtree(logdir / "rolled-0")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        p = logdir / name
        p.write_text(p.read_text().replace("rolled 0 240", "rolled 0 0"))
    r = run_kdump("verify", "--json", logdir)
    assert missing(r.out) == []


def _drop_rolled(p: Path) -> None:
    lines = [line for line in p.read_text().splitlines() if not line.startswith("rolled ")]
    p.write_text("\n".join([lines[0], str(len(lines) - 2), *lines[2:]]) + "\n")


def test_a_partition_deleted_since_the_last_high_watermark_checkpoint_is_fine(logdir):
    # A topic deleted, its dir removed file.delete.delay.ms later: LogManager rewrote the
    # recovery points without it at once, the high watermarks still list it until ReplicaManager
    # writes them next.
    shutil.rmtree(logdir / "rolled-0")
    _drop_rolled(logdir / "recovery-point-offset-checkpoint")
    r = run_kdump("verify", "--json", logdir)
    assert missing(r.out) == []


def test_a_partition_dir_deleted_before_its_recovery_point_moved(logdir):
    # The recovery point names the log (at 0: nothing flushed yet); the high watermark how far it reached.
    shutil.rmtree(logdir / "rolled-0")
    p = logdir / "recovery-point-offset-checkpoint"
    p.write_text(p.read_text().replace("rolled 0 240", "rolled 0 0"))
    r = run_kdump("verify", "--json", logdir)
    assert missing(r.out) == [("recovery-point-offset-checkpoint", None,
                               "offsets below 240 are missing: the log dir has no rolled-0 directory; the recovery "
                               "point in recovery-point-offset-checkpoint is 0; the high watermark in "
                               f"replication-offset-checkpoint is 240{TAIL}")]
