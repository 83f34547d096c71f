"""Which file a fetch reads each offset of a tiered partition from (``TieredPartition.reads``):
the local log from its start offset on (ReplicaManager fetches remotely only below
localLogStartOffset), below it the remote segment starting at or below the offset last."""

from __future__ import annotations

from kdump.check.tiered import TieredPartition
from kdump.storage.logdir import LOG, LogFile


def _seg(where: str, base: int) -> LogFile:
    return LogFile(f"{where}/{base:020d}.log", LOG, "t", 0, base, None)


def _part(remote: list[tuple[int, int]], local: list[int]) -> TieredPartition:
    return TieredPartition("t", 0, [(_seg("r", a), b) for a, b in remote], [_seg("l", b) for b in local], [], "l")


def _reads(t: TieredPartition) -> list[tuple[str, int | None]]:
    return [(f.path.split("/")[0] + str(f.base_offset), last) for f, last in t.reads()]


def test_the_local_log_serves_from_its_start_offset():
    # copies not yet removed by local retention: the local ones are read
    t = _part([(0, 99), (100, 199), (200, 299)], [200, 300])
    assert _reads(t) == [("r0", 99), ("r100", 199), ("l200", None), ("l300", None)]
    assert t.cuts() == {} and t.both_tiers() == (200, 299)
    # the local log starts inside a remote segment: that one is read up to it
    t = _part([(0, 99), (100, 199), (200, 299)], [150, 300])
    assert _reads(t) == [("r0", 99), ("r100", 149), ("l150", None), ("l300", None)]
    assert t.cuts() == {"r/00000000000000000100.log": 149} and t.both_tiers() == (150, 299)


def test_no_overlap_and_no_local_log():
    t = _part([(0, 99), (100, 199)], [200])
    assert _reads(t) == [("r0", 99), ("r100", 199), ("l200", None)]
    assert t.cuts() == {} and t.both_tiers() is None
    t = _part([(0, 99), (100, 199)], [])
    assert _reads(t) == [("r0", 99), ("r100", 199)] and t.both_tiers() is None
    # a local log that starts below every remote segment reads none of them
    assert _reads(_part([(100, 199)], [50])) == [("l50", None)]


def test_overlapping_remote_segments():
    # the one starting later serves from its start (RemoteLogMetadataCache's floor lookup)
    t = _part([(0, 99), (50, 149)], [150])
    assert _reads(t) == [("r0", 49), ("r50", 149), ("l150", None)]
    assert t.cuts() == {"r/00000000000000000000.log": 49}
