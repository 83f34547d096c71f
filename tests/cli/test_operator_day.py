"""An operator's day: the help, tables that fit any terminal, answers that say
what was not found or not reached, and figures written for people."""

from __future__ import annotations

import shutil

import pytest

from kdump.encode import build_v2_batch
from support.run import FIXTURES, GENERATED, REAL, run_kdump

BROKER = FIXTURES / "broker" / "all-shapes"
METADATA_SNAPSHOTS = REAL / "Manny-97__end-to-end-streaming-system" / "kafka" / "data"
# That copy has the KRaft snapshots but no .log: a point past them is said to lack the records after them.
NO_LOG_NOTE = (f"kdump: note: incomplete: {METADATA_SNAPSHOTS}/__cluster_metadata-0: no .log segment: the records "
               "after the snapshot are gone")
TUYEN = REAL / "tuyen-nnt__kafka_2.13-3.0.0" / "data"
BOX = set("┃│┏┓┗┛┡┩┣┫━─┳┻╇╋┼┬┴┌┐└┘")


def test_kdump_alone_prints_the_help_and_exits_0():
    r = run_kdump()
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith("Usage: kdump [OPTIONS] COMMAND [ARGS]...\n") and "\\x0a" not in r.out
    assert "  dump " in r.out


def test_a_mistyped_command_gets_a_did_you_mean():
    r = run_kdump("dunp")
    assert r.code == 2
    assert r.err.splitlines()[0] == "kdump: error: No such command 'dunp'. Did you mean 'dump'?"
    assert "Did you mean" not in run_kdump("xyzzy").err


def test_files_completes_paths_in_the_shell():
    import os
    import subprocess
    import sys

    env = dict(os.environ, _KDUMP_COMPLETE="bash_complete", COMP_WORDS="kdump dump --files fix", COMP_CWORD="3")
    r = subprocess.run([sys.executable, "-m", "kdump"], env=env, capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "file,fix\n")      # bash then completes it as a path


def test_groups_names_a_group_that_is_not_there():
    r = run_kdump("groups", BROKER, "--group", "nope", "--format", "text")
    assert r.code == 1
    assert r.out == "__consumer_offsets: 1 partition (from __cluster_metadata), 1 here; group nope belongs in " \
                    "__consumer_offsets-0\n"
    assert r.err == "kdump: group nope not found (it would be in __consumer_offsets-0)\n"
    assert run_kdump("groups", BROKER, "--group", "console-classic", "--format", "text").code == 0


def test_groups_without_a_partition_count_says_so(tmp_path):
    shutil.copytree(BROKER / "__consumer_offsets-0", tmp_path / "__consumer_offsets-0")
    r = run_kdump("groups", tmp_path, "--format", "text")
    assert r.out.splitlines()[0] == "__consumer_offsets: partition count unknown, 1 here"


@pytest.mark.parametrize("at, message", [
    ("7000", "the data here ends at offset 6341, before offset 7000"),
    ("100", "nothing here reaches offset 100: no snapshot at or before it, and no log from offset 0"),
])
def test_metadata_at_a_point_it_cannot_reach_says_so_and_fails(at, message):
    r = run_kdump("metadata", METADATA_SNAPSHOTS, "--at", at, "--format", "text")
    assert r.code == 3
    assert r.err == f"{NO_LOG_NOTE}\nkdump: error: --at {at}: {message}\n"
    first = r.out.splitlines()[0]
    assert ("replayed to offset 6341" in first) if at == "7000" else first == \
        "cluster metadata: nothing replayed (no snapshot or log at or before the point)"


def test_metadata_at_a_point_it_reaches_exits_0():
    r = run_kdump("metadata", METADATA_SNAPSHOTS, "--at", "6341", "--format", "text")
    assert (r.code, r.err) == (0, "")


def test_salvage_with_nothing_past_the_damage_says_so(tmp_path):
    shutil.copytree(GENERATED / "torn-tail-0", tmp_path / "logs" / "torn-tail-0")
    r = run_kdump("recover", tmp_path / "logs" / "torn-tail-0", "--salvage", tmp_path / "out")
    assert f"kdump: nothing to salvage: no intact batch lies past the damage (nothing written to " \
           f"{tmp_path / 'out'})\n" in r.err
    assert not (tmp_path / "out").exists()


def test_index_verify_prints_the_verdict_and_entries_only_when_asked():
    seg = GENERATED / "mixed-codecs-v2-0"
    r = run_kdump("index", seg, "--verify", "--format", "text")
    assert r.code == 0 and "offset:" not in r.out
    assert r.out.splitlines()[1].startswith("verified 2 entries against ")
    r = run_kdump("index", seg, "--verify", "--entries", "--format", "text")
    assert r.out.splitlines()[1].startswith("offset: ") and "verified 2 entries" in r.out


def test_plurals_and_durations_for_people():
    from kdump.words import duration, plural, rate, size

    assert [plural(1, "entry"), plural(2, "entry"), plural(1, "batch"), plural(3, "batch")] == \
        ["1 entry", "2 entries", "1 batch", "3 batches"]
    assert duration(1596019 * 60_000) == "1108 days 8 h" and duration(6_360_000) == "1 h 46 min"
    assert size(1258725000) == "1.26 GB" and size(999) == "999 bytes"
    assert rate(282, 0.9, "rows") == "in 0.9 s" and rate(3000, 2.0, "rows") == "in 2.0 s (1,500 rows/s)"


# -- tables at any width -----------------------------------------------------------------------

def _torn(tmp_path):
    d = tmp_path / "logs" / "torn-tail-0"
    if not d.exists():
        shutil.copytree(GENERATED / "torn-tail-0", d)
    return d


TABLES = {
    "groups": (lambda t: ("groups", BROKER), ["console-read-committed", "codec-snappy-0", "txn-0"]),
    "info": (lambda t: ("info", TUYEN), ["__consumer_offsets-49", "my-first-topic-2"]),
    "txn": (lambda t: ("txn", BROKER), ["kafka-python-txn", "codec-none-0"]),
    "metadata": (lambda t: ("metadata", BROKER), ["compacted-purged", "log-append-time"]),
    "dump": (lambda t: ("dump", GENERATED / "transactions-0"), ["2023-11-14 22:13:20.", "2000/3", "txn control"]),
    "dump-records": (lambda t: ("dump", GENERATED / "transactions-0", "--records"), ["2023-11-14 22:13:20."]),
    "verify": (lambda t: ("verify", _torn(t)), ["00000000000000000000.log"]),
    "recover": (lambda t: ("recover", _torn(t)), ["00000000000000000000.log.corrupt-667"]),
    "index": (lambda t: ("index", GENERATED / "mixed-codecs-v2-0", "--verify", "--entries"), ["verified 2 entries"]),
}


@pytest.mark.parametrize("width", [60, 80, 120, 200])
@pytest.mark.parametrize("table", list(TABLES))
def test_every_table_fits_without_cutting(tmp_path, monkeypatch, table, width):
    """No column shrinks below its content; names, offsets and times are never cut
    (no ellipsis, nothing folded mid-token); a table's ruled lines fit the width."""
    monkeypatch.setenv("COLUMNS", str(width))
    args, tokens = TABLES[table]
    r = run_kdump(*args(tmp_path), "--format", "table", "--color", "never")
    assert r.code in (0, 1), r.err
    assert "…" not in r.out
    for token in tokens:
        assert token in r.out, (token, r.out)
    ruled = [line for line in r.out.splitlines() if BOX & set(line)]
    assert all(len(line) <= width for line in ruled), [line for line in ruled if len(line) > width]
    assert "┃┃" not in r.out and "││" not in r.out


def test_info_says_the_log_dir_once_above_its_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = run_kdump("info", TUYEN, "--format", "table", "--color", "never")
    heads = [line for line in r.out.splitlines() if str(TUYEN) in line]
    assert heads == [f"kdump info: {TUYEN}/{d}" for d in ("kafka", "kafka-1", "kafka-2")]


def test_dump_table_rows_stay_aligned_past_the_first_chunk(tmp_path, monkeypatch):
    """The table is drawn 500 rows at a time; offsets growing from 1 to 4 digits
    past the first chunk must not move the columns."""
    d = tmp_path / "wide-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"".join(
        build_v2_batch([(0, 1_700_000_000_000 + o, b"k", b"v")], base_offset=o, partition_leader_epoch=0)
        for o in range(1200)))
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "120")
    for extra in ((), ("--records",), ("--format", "table")):     # the last: on a terminal
        if extra[:1] == ("--format",):
            out = run_kdump("dump", d, "--color", "never", "-q", out=Terminal()).out.splitlines()
        else:
            out = run_kdump("dump", d, "--format", "table", "--color", "never", *extra).out.splitlines()
        rows = out[2:]
        assert len(rows) == 1200
        assert len({len(line) for line in rows}) == 1, sorted({len(line) for line in rows})
        assert rows[0].index("✓") == rows[-1].index("✓")


def test_metadata_diff_says_which_point_it_cannot_reach():
    r = run_kdump("metadata", METADATA_SNAPSHOTS, "--diff", "100", "7000", "--format", "text")
    assert r.code == 3
    assert r.err.splitlines() == [
        NO_LOG_NOTE,
        "kdump: error: --diff 100: nothing here reaches offset 100: no snapshot at or before it, and no log from "
        "offset 0",
        "kdump: error: --diff 7000: the data here ends at offset 6341, before offset 7000"]
    assert run_kdump("metadata", BROKER, "--diff", "10", "100", "--format", "text").code == 0


def test_info_findings_are_a_count_on_a_terminal_and_not_problems(tmp_path, monkeypatch):
    """A missing index (info: the broker rebuilds it) is counted, not tabled;
    --problems skips a file whose only findings are info."""
    monkeypatch.setenv("COLUMNS", "120")
    part = TUYEN / "kafka" / "my-first-topic-1"
    r = run_kdump("verify", part, "--format", "table", "--color", "never")
    assert r.code == 0 and "index_missing" not in r.out.split("info findings not listed")[0]
    assert "2 info findings not listed (2 index_missing: states a broker finishes at startup); --format text " \
           "lists them" in " ".join(r.out.split())
    assert run_kdump("verify", part, "--problems", "--format", "text").out == ""
    assert "index_missing" in run_kdump("verify", part, "--format", "text").out
    d = _torn(tmp_path)
    r = run_kdump("verify", d, "--problems", "--format", "table", "--color", "never")
    assert "torn_tail at byte 667" in r.out and "index_missing" not in r.out.split("info findings")[0]
