"""RemoteLogManager's leader-epoch lineage rule (kdump.check.tiered_lineage) and the findings it
gives in a tiered partition's check: a duplicate upload, a segment outside the lineage, an
incomplete metadata read. The cases follow RemoteLogManager's own comments and tests."""

from __future__ import annotations

from kdump.check.tiered import check_partition
from kdump.check.tiered_lineage import choose, filtered, within_lineage
from kdump.state.remote_log import RemoteSegmentMeta
from kdump.storage.remote_store import LocalTieredStorage

LINEAGE = [(5, 10), (7, 15), (9, 100)]


def _meta(sid: str, start: int, end: int, epochs, finished_at: int) -> RemoteSegmentMeta:
    return RemoteSegmentMeta(sid.ljust(22, "A"), "t", "T" * 22, 0, start, end, 1, True, 1, finished_at,
                             epochs=tuple(epochs))


def test_epochs_without_records_are_dropped():
    assert filtered([(1, 0), (2, 0), (3, 10)]) == [(2, 0), (3, 10)]


def test_within_lineage():
    assert within_lineage([(5, 10), (7, 15)], 50, LINEAGE, 200)
    assert within_lineage([(5, 14), (7, 15), (9, 100)], 150, LINEAGE, 200)
    assert not within_lineage([(5, 10), (6, 12)], 50, LINEAGE, 200)          # an epoch the lineage lacks
    assert not within_lineage([(5, 10), (7, 16)], 50, LINEAGE, 200)          # epoch 7 starts elsewhere
    assert not within_lineage([(7, 15)], 120, LINEAGE, 200)                  # past epoch 9's start
    assert not within_lineage([(10, 120)], 130, LINEAGE, 200)                # newer than the lineage
    assert not within_lineage([(9, 100)], 150, LINEAGE, 150)                 # not below the log end
    # the lineage's first epoch cut by log start (segment1 deleted): its start may precede it
    assert within_lineage([(5, 14), (7, 15), (9, 100)], 150, [(7, 51), (9, 100)], 200)
    assert within_lineage([(3, 0)], 9, [], None)                             # no checkpoint: nothing judged


def test_choose_duplicates_and_outside():
    first = _meta("one", 0, 99, [(5, 0)], 10)
    again = _meta("two", 0, 99, [(5, 0)], 20)            # uploaded again, finished later: read
    diverged = _meta("three", 100, 199, [(6, 100)], 30)  # epoch 6 is not in the lineage, nothing else there
    chosen, duplicates, outside = choose([first, again, diverged], [(5, 0), (7, 100)], None)
    assert [m.segment_id for m in chosen] == [again.segment_id, diverged.segment_id]
    assert duplicates == [first] and outside == [diverged]


def test_findings(tmp_path):
    local = tmp_path / "t-0"
    local.mkdir()
    (local / "leader-epoch-checkpoint").write_text("0\n2\n5 0\n7 100\n")
    (tmp_path / "store").mkdir()
    store = LocalTieredStorage(str(tmp_path / "store"))
    metas = {m.segment_id: m for m in (_meta("one", 0, 99, [(5, 0)], 10), _meta("two", 0, 99, [(5, 0)], 20),
                                       _meta("three", 100, 199, [(6, 100)], 30))}
    t = check_partition(store, metas, [], "t", 0, str(local), incomplete=["x: offset 4: an update for segment S"])
    kinds = [(loc.finding.kind, loc.finding.offset) for loc in t.findings
             if loc.finding.kind.startswith(("remote_dup", "remote_lin", "remote_meta"))]
    assert kinds == [("remote_metadata_incomplete", None), ("remote_duplicate", 0), ("remote_lineage_mismatch", 100)]
    by_kind = {loc.finding.kind: loc.finding.message for loc in t.findings}
    assert by_kind["remote_duplicate"] == (f"segment {'one'.ljust(22, 'A')} (offsets 0..99) is uploaded again as "
                                           f"{'two'.ljust(22, 'A')}, which RemoteLogManager reads")
    assert by_kind["remote_lineage_mismatch"] == (f"segment {'three'.ljust(22, 'A')} (offsets 100..199) has leader "
                                                  "epochs 6@100, not the local leader-epoch-checkpoint's (kept: no "
                                                  "other segment holds its offsets)")
    assert by_kind["remote_metadata_incomplete"] == "x: offset 4: an update for segment S: these findings may be stale"
