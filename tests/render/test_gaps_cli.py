"""kdump's own views (text, table, JSON) with --records: the offset gaps an operator has to look at.

With DumpLogSegments' command line (--files) the text view lists every gap as Kafka does
(tests/render/test_dls_cli.py), ``-1 is followed by <first offset>`` included; kdump's own
spelling (PATHS) leaves out the ones the cleaner explains and the start of the log, the start
an offset range or --max-bytes chose included (kdump/check/gaps.py), and says how many.
"""

from __future__ import annotations

import shutil

import pytest

from kdump import encode as build
from kdump.encode import encode_offsets
from support.run import FIXTURES, GENERATED, run_kdump, write_segment

BROKER_COMPACTED = FIXTURES / "broker" / "all-shapes" / "compacted-0"
VIEWS = (("--json",), ("--format", "table"), ("--format", "text"))


def _gap_lines(path, gaps):
    return [f"kdump: non-consecutive offsets in {path}: {a} is followed by {b}" for a, b in gaps]


@pytest.mark.parametrize("view", VIEWS)
def test_broker_cleaned_partition_reports_only_the_count(view):
    # Real cleaner output; the broker's cleaner-offset-checkpoint says `compacted 0 172`.
    r = run_kdump("dump", "--records", *view, BROKER_COMPACTED)
    assert r.code == 0
    assert r.err == (f"kdump: 2 offset gaps in {BROKER_COMPACTED} explained by compaction "
                     f"(cleaned up to offset 172) not listed\n")


def test_dls_command_line_still_lists_every_gap():
    r = run_kdump("dump", "--deep-iteration", "--files", ",".join(str(p) for p in sorted(BROKER_COMPACTED.glob("*.log"))))  # noqa: E501
    assert r.code == 0
    assert r.err.splitlines()[:2] == [f"Non-consecutive offsets in {BROKER_COMPACTED}/00000000000000000000.log",
                                      "  -1 is followed by 100"]
    assert "kdump:" not in r.err


@pytest.mark.parametrize("view", VIEWS)
def test_uncleaned_gaps_are_listed(view):
    # fixtures/generated has no cleaner-offset-checkpoint: nothing explains the gaps.
    part = GENERATED / "compacted-0"
    r = run_kdump("dump", "--records", *view, part)
    assert r.code == 0        # a note, as DumpLogSegments' report: not damage
    assert r.err.splitlines() == (
        _gap_lines(part / "00000000000000000000.log", [(0, 2), (2, 5), (5, 15), (15, 20), (20, 23), (24, 27)])
        + _gap_lines(part / "00000000000000000100.log", [(27, 101), (101, 109)]))


def _cleaned_copy(tmp_path, cleaned_to):
    logdir = tmp_path / "logs"
    part = logdir / "compacted-0"
    shutil.copytree(GENERATED / "compacted-0", part)
    (logdir / "cleaner-offset-checkpoint").write_bytes(encode_offsets([("other", 0, 5), ("compacted", 0, cleaned_to)]))
    return part


@pytest.mark.parametrize("view", VIEWS)
def test_gaps_past_the_cleaned_offset_are_listed(tmp_path, view):
    part = _cleaned_copy(tmp_path, 100)
    r = run_kdump("dump", "--records", *view, part)
    assert r.code == 0
    assert r.err.splitlines() == _gap_lines(part / "00000000000000000100.log", [(101, 109)]) + [
        f"kdump: 7 offset gaps in {part} explained by compaction (cleaned up to offset 100) not listed"]


def _files(part):
    return ",".join(str(p) for p in sorted(part.glob("*.log")))


def test_dls_command_line_unchanged_by_the_checkpoint(tmp_path):
    part = _cleaned_copy(tmp_path, 200)
    with_checkpoint = run_kdump("dump", "--deep-iteration", "--files", _files(part))
    plain = run_kdump("dump", "--deep-iteration", "--files", _files(GENERATED / "compacted-0"))
    assert with_checkpoint.code == plain.code == 0
    assert with_checkpoint.err == plain.err.replace(str(GENERATED / "compacted-0"), str(part))
    assert "  101 is followed by 109" in with_checkpoint.err


def _batch(first, count):
    return build.build_v2_batch([(i, 1_700_000_000_000 + i, b"k", b"v") for i in range(count)], base_offset=first)


@pytest.mark.parametrize("view", VIEWS)
def test_a_missing_batch_in_a_log_not_cleaned_is_listed(tmp_path, view):
    logdir = tmp_path / "logs"
    # Starts at 50 (retention): not a gap. The batch 55-59 is gone: a gap the cleaner does not explain.
    seg = write_segment(logdir / "plain-0", [_batch(50, 5), _batch(60, 5)], base_offset=50)
    (logdir / "cleaner-offset-checkpoint").write_bytes(encode_offsets([("compacted", 0, 1000)]))
    r = run_kdump("dump", "--records", *view, logdir / "plain-0")
    assert r.code == 0
    assert r.err.splitlines() == _gap_lines(seg, [(54, 60)])


def test_the_list_is_capped_per_file(tmp_path):
    seg = write_segment(tmp_path / "holes-0", [_batch(2 * i, 1) for i in range(25)])
    r = run_kdump("dump", "--records", "--json", tmp_path / "holes-0")
    assert r.code == 0
    assert r.err.splitlines() == _gap_lines(seg, [(2 * i, 2 * i + 2) for i in range(20)]) + [
        f"kdump: 4 more non-consecutive offsets in {seg} not listed"]


REAL_SEGMENTS = sorted((FIXTURES / "real").rglob("*.log"))


@pytest.mark.parametrize("limit", [("--max-bytes", "1500"), ("--max-bytes", "100000000"), ("--start-offset", "1")])
def test_a_segment_alone_has_no_false_gap(limit):
    """The first record a segment, --max-bytes or --start-offset shows is where the listing starts: not a
    gap (kafka-dump-log.sh reports "-1 is followed by N" for it; kdump only with --files)."""
    assert len(REAL_SEGMENTS) >= 60
    for seg in REAL_SEGMENTS:
        r = run_kdump("dump", "--records", "--format", "text", *limit, seg)
        assert "-1 is followed by" not in r.err and "Non-consecutive" not in r.err, (seg, r.err)


def test_the_readmes_find_by_offset_example_is_quiet():
    part = FIXTURES / "real" / "pinterest__tiered-storage" / "ts-common" / "src" / "test" / "resources" / \
        "log-files" / "timeindex_test"
    r = run_kdump("dump", part, "--data", "--start-offset", "15400", "--end-offset", "15402", "--format", "text")
    assert (r.code, r.err) == (0, "")
    assert [x.split(" key: ")[1] for x in r.out.splitlines() if x.startswith("| offset: ")] == [
        "15400 payload: kafkaVal-15400", "15401 payload: kafkaVal-15401", "15402 payload: kafkaVal-15402"]
    # Kafka's own command line keeps Kafka's report, the quirk included.
    seg = part / "00000000000000015363.log"
    r = run_kdump("dump", "--files", str(seg), "--deep-iteration", "--max-bytes", "1500")
    assert r.err.splitlines()[:2] == [f"Non-consecutive offsets in {seg}", "  -1 is followed by 15363"]


def test_quiet_and_time_ranges_have_no_report():
    part = GENERATED / "compacted-0"
    assert run_kdump("dump", "--records", "--json", "--quiet", part).err == ""
    assert run_kdump("dump", "--records", "--json", "--start-time", "0", part).err == ""
