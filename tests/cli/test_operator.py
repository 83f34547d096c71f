"""What a new operator trips over: each item as a CLI test, exact where it can be."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from support.run import GENERATED, REAL, ROOT, run_kdump, snapshot_tree

PINTEREST = REAL / "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test"
SEG0 = "00000000000000000000"


class Tty(io.StringIO):
    def isatty(self):
        return True


def run_on_terminal(*args, stdout_tty: bool = False) -> tuple[int, str, str]:
    """Run kdump in-process with stderr (and optionally stdout) looking like a terminal."""
    return tuple(run_kdump(*args, out=Tty() if stdout_tty else None, err=Tty()))


@pytest.fixture
def cut_log(tmp_path):
    """Pinterest's real partition with its first segment cut to 5000 bytes: its .index and
    .timeindex then point past the end of the log ~250 times each."""
    d = tmp_path / "t-0"
    shutil.copytree(PINTEREST, d)
    with open(d / f"{SEG0}.log", "r+b") as f:
        f.truncate(5000)
    return d


# -- flood control ------------------------------------------------------------------------------

def test_a_run_of_one_finding_kind_is_one_line_and_json_keeps_each(cut_log):
    # An index file keeps the first 50 findings of a kind and counts the rest, as a segment does.
    r = run_kdump("verify", cut_log)
    assert r.code == 1
    index_lines = [line for line in r.out.splitlines() if "index_past_end" in line]
    assert index_lines == [
        "  index_past_end at bytes 8..400, offsets 64..1584 (50 findings): slot 1: position 8428 is past the end "
        "of the log (4996 bytes); 49 more like it",
        "  index_past_end: 198 more in this file, not listed (the first 50 of each kind are)",
        "  timeindex_past_end at bytes 12..600, offsets 64..1584 (50 findings): slot 1: offset 64 is past the end "
        "of the log (the last offset in the log is 37); 49 more like it",
        "  timeindex_past_end: 199 more in this file, not listed (the first 50 of each kind are)"]
    objs = {os.path.basename(o["file"]): o for o in map(json.loads, run_kdump("verify", "--json", cut_log).out
                                                         .splitlines())}
    assert [f["kind"] for f in objs[f"{SEG0}.index"]["findings"]].count("index_past_end") == 50
    assert objs[f"{SEG0}.index"]["not_listed"] == {"index_past_end": 198}


def test_index_verify_collapses_its_listing_and_error_lines(cut_log):
    r = run_kdump("index", cut_log / f"{SEG0}.log", "--verify-index-only")
    assert r.code == 1
    assert "50 faults at bytes 8..400, offsets 64..1584: slot 1: position 8428 is past the end of the log " \
           "(5000 bytes); 49 more like it [index_past_end]" in r.out
    assert "note: index_past_end: 198 more faults not listed (the first 50 of each kind are)" in r.out.splitlines()
    assert r.err.splitlines() == [f"kdump: error: {cut_log / SEG0}.index:8: 50 index_past_end faults from here: "
                                  f"slot 1: position 8428 is past the end of the log (5000 bytes); 49 more like it"]


def test_problems_lists_only_files_with_findings(cut_log):
    r = run_kdump("verify", "--problems", cut_log)
    assert [line.split(":")[0] for line in r.out.splitlines() if not line.startswith(" ")] == [
        f"{cut_log}/{SEG0}.log", f"{cut_log}/{SEG0}.index", f"{cut_log}/{SEG0}.timeindex"]
    assert "17 files" in r.err                         # the summary still counts every file
    assert len(run_kdump("verify", "--problems", "--json", cut_log).out.splitlines()) == 3


def test_terminal_table_keeps_names_whole_and_sums_up_the_ok_files(cut_log, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = run_kdump("verify", "--format", "table", cut_log)
    for name in (f"{SEG0}.log", f"{SEG0}.index", f"{SEG0}.timeindex"):
        assert f"│ {name} " in r.out, name                   # whole, on one line
    assert f"{SEG0[:10]}\n" not in r.out and "00000000000000007729" not in r.out   # ok files not listed
    letters = "".join(r.out.split())      # (a long tmp path folds anywhere)
    assert "".join(f"14 ok files in {cut_log} not listed (3 log, 3 index, 3 timeindex, 3 producer_snapshot,".split()) \
        in letters
    # (the directory's title is never folded: a path stays whole, to copy; the terminal may wrap it)
    assert max(len(line) for line in r.out.splitlines() if line != str(cut_log)) <= 80
    assert str(cut_log) in r.out.splitlines()


# -- progress -----------------------------------------------------------------------------------

@pytest.fixture
def no_delay(monkeypatch):
    from kdump.render import progress

    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    monkeypatch.delenv("KDUMP_NO_PROGRESS", raising=False)


@pytest.mark.parametrize("argv", [("dump",), ("dump", "--records"), ("verify",), ("index", "--verify"),
                                  ("info",), ("recover",), ("export", "--format", "ndjson", "--out", "{tmp}/x")])
def test_every_command_that_reads_data_shows_a_bar_on_a_terminal(argv, tmp_path, no_delay, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")        # (a 40-column bar folds its figures)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run_on_terminal(*argv, PINTEREST)
    assert code in (0, 1), err
    assert f"kdump {argv[0]}" in err and "MB" in err and "/s" in err and "eta" in err, err[-500:]


def test_the_bar_counts_bytes_from_the_mappings(no_delay, monkeypatch):
    from kdump.render import progress
    from kdump.render.output import Output

    seen = []
    monkeypatch.setattr(progress.Progress, "close", lambda self: seen.append((self.completed, self.total)))
    from kdump.run.verify import run_verify

    monkeypatch.setattr(sys, "stderr", Tty())
    run_verify([str(PINTEREST)], Output(False, "text", stream=io.StringIO()))
    total = sum(f.stat().st_size for f in PINTEREST.iterdir())
    assert seen == [(total, total)]


def test_no_bar_with_json_to_a_pipe_or_quiet(no_delay):
    for argv in (("dump", "--json"), ("verify", "-q"), ("dump", "-q"), ("info", "--json")):
        code, out, err = run_on_terminal(*argv, PINTEREST)
        assert "eta" not in err, argv


def test_output_to_the_same_terminal_scrolls_above_the_bar(no_delay):
    code, out, err = run_on_terminal("dump", PINTEREST / f"{SEG0}.log", "--format", "text", stdout_tty=True)
    assert code == 0
    # With the bar up, what dump prints goes through the bar's console (above it), so it
    # lands on the terminal's stderr stream here; nothing is lost.
    both = out + err
    assert both.count("baseOffset: ") == 7729 and "kdump dump" in err


# -- interrupted export ------------------------------------------------------------------------

def _staging(parent: Path) -> list[str]:
    return [n for n in os.listdir(parent) if n.startswith(".kdump-")]


def test_export_appears_complete_or_not_at_all(tmp_path, monkeypatch):
    out = tmp_path / "out"
    r = run_kdump("export", GENERATED, "--out", out, "--format", "ndjson")
    assert r.code == 1 and (out / "_SUCCESS").is_file() and _staging(tmp_path) == []
    # Interrupted half-way: no --out at all, and nothing left behind.
    import kdump.export.local as ex

    real = ex.json_items

    def interrupted(sl, *a, **k):
        yield from real(sl, *a, **k)
        if "headers" in sl.path:
            raise KeyboardInterrupt

    monkeypatch.setattr(ex, "json_items", interrupted)
    out2 = tmp_path / "out2"
    r = run_kdump("export", GENERATED, "--out", out2, "--format", "ndjson")
    assert r.code == 130 and not out2.exists() and _staging(tmp_path) == []
    monkeypatch.setattr(ex, "json_items", real)
    # A run killed outright leaves its staging directory: the rerun clears it and just works.
    killed = tmp_path / ".kdump-staging-0123abcd.out2"     # (remote_out.staging_name)
    (killed / "topic=x").mkdir(parents=True)
    r = run_kdump("export", GENERATED, "--out", out2, "--format", "ndjson")
    assert r.code == 1 and (out2 / "_SUCCESS").is_file() and _staging(tmp_path) == []
    # A finished export is replaced only with --overwrite, and then whole.
    assert run_kdump("export", GENERATED / "headers-0", "--out", out2, "--format", "ndjson").code == 2
    r = run_kdump("export", GENERATED / "headers-0", "--out", out2, "--format", "ndjson", "--overwrite")
    assert r.code == 0 and sorted(os.listdir(out2)) == ["_SUCCESS", "topic=headers"]


def test_export_without_pyarrow_names_the_exact_install_command(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *a, **k):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    monkeypatch.chdir(ROOT)
    r = run_kdump("export", "fixtures/generated/headers-0", "--out", tmp_path / "p")
    assert r.code == 3 and r.err.startswith("kdump: error: Parquet export needs pyarrow")
    pip = os.path.relpath(os.path.join(sys.prefix, "bin", "pip"))
    if not pip.startswith(".."):
        assert f"kdump: hint: {pip if os.sep in pip else './' + pip} install -e '.[parquet]'\n" in r.err, r.err
    assert not (tmp_path / "p").exists()


# -- exit statuses and messages ---------------------------------------------------------------

def test_apply_without_a_terminal_or_yes_is_a_usage_error(tmp_path, monkeypatch):
    d = tmp_path / "t-0"
    shutil.copytree(GENERATED / "torn-tail-0", d)
    before = snapshot_tree(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    r = run_kdump("recover", "--apply", d)
    assert r.code == 2 and "add --yes to apply without asking" in r.err and "aborted" not in r.err
    assert snapshot_tree(tmp_path) == before


def _png(path: Path) -> Path:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\0" * 784)) + chunk(b"IEND", b""))
    return path


def test_a_png_renamed_log_is_not_a_segment_and_no_garbage_offset_is_quoted(tmp_path):
    seg = _png(tmp_path / "pics-0" / f"{SEG0}.log")
    what = "does not look like a Kafka log segment: found record size 13 smaller than minimum record overhead (14)"
    r = run_kdump("verify", seg)
    assert r.code == 1 and r.out.splitlines()[1] == f"  invalid_size at byte 0: {what}"
    (obj,) = map(json.loads, run_kdump("verify", "--json", seg).out.splitlines())
    assert obj["findings"] == [{"kind": "invalid_size", "class": "damage", "position": 0, "offset": None, "message": what}]  # noqa: E501
    r = run_kdump("dump", seg)
    assert r.code == 1 and r.err == f"kdump: error: {seg}:0: {what}\n"
    for argv in (("verify",), ("dump",), ("recover",), ("info",)):
        r = run_kdump(*argv, seg.parent)
        assert "-8552249625308161526" not in r.out + r.err, argv     # the PNG signature read as an offset


def test_a_bad_crc_finding_quotes_no_offset_from_the_bad_batch(tmp_path):
    d = tmp_path / "t-0"
    shutil.copytree(PINTEREST, d)
    with open(d / f"{SEG0}.log", "r+b") as f:       # a byte inside batch 7 (offset 7)
        f.seek(1000)
        b = f.read(1)
        f.seek(1000)
        f.write(bytes([b[0] ^ 0xFF]))
    objs = [json.loads(line) for line in run_kdump("verify", "--json", d / f"{SEG0}.log").out.splitlines()]
    assert objs[0]["findings"][0] == {"kind": "crc_mismatch", "class": "damage", "position": 910, "offset": None,
                                      "message": "Record is corrupt (stored crc = 2765771479, computed crc = "
                                                 "4029701860)"}
    r = run_kdump("dump", d / f"{SEG0}.log")
    assert f"kdump: error: {d / SEG0}.log:910: batch has an invalid CRC (stored 2765771479)\n" in r.err


def test_a_partition_with_indexes_but_no_log_is_the_same_anomaly_for_dump_and_verify(tmp_path):
    d = tmp_path / "orders-0"
    d.mkdir()
    for ext in (".index", ".snapshot"):
        shutil.copy(PINTEREST / f"00000000000000007729{ext}", d)
    message = ("no log segment (.log) in this partition, only 00000000000000007729.index, "
               "00000000000000007729.snapshot: the records they describe are gone; a broker deletes them and "
               "starts the partition empty at its log start offset")
    v, dump = run_kdump("verify", d), run_kdump("dump", d)
    # The broker starts on it (an anomaly), but the records are lost: records_missing, exit 1.
    assert (v.code, dump.code) == (1, 0)
    assert v.out.splitlines() == [
        f"{d}/00000000000000007729.index: damaged, 2016 bytes",
        "  orphan_index at offset 7729: no segment has this base offset: the broker deletes orphan indexes at "
        "startup",
        f"  log_missing (anomaly): {message}",
        "  records_missing at offset 7729: offsets 7729..15362 are missing (7634 offsets): no .log holds them; "
        "00000000000000007729.log is gone, its .index remains (last index entry: offset 15362): a broker starts "
        "without them and no reader will see these records",
        f"{d}/00000000000000007729.snapshot: ok, 56 bytes",
        "  snapshot_deleted at offset 7729: the broker's next load deletes this snapshot: the load "
        "(truncateAndReload to the log end offset 0): past offset 0"]
    assert v.err == ("kdump: verified 2 files (0 segments, 0 bytes): 1 ok, 1 damaged, 0 torn tail, 0 unreadable; "
                     "1 anomaly (states a broker accepts)\n")
    assert dump.err.splitlines() == [f"kdump: note: {d}: log_missing: {message}"] and dump.out == ""


def test_debug_after_the_subcommand(tmp_path):
    r = run_kdump("dump", tmp_path / "missing.log", "--debug")
    assert r.code == 3 and "No such option" not in r.err and "cannot read" in r.err


@pytest.mark.parametrize("argv, message", [
    (("--json", "--format", "text"), "--json and --format text contradict each other: give one"),
    (("--start-offset", "10", "--end-offset", "5"), "--start-offset 10 is after --end-offset 5: nothing could match"),
    (("--start-time", "2024-01-02", "--end-time", "2024-01-01"), "--start-time 1704153600000 is after --end-time "
                                                                  "1704067200000: nothing could match"),
])
def test_contradictory_options_are_usage_errors(argv, message):
    r = run_kdump("dump", GENERATED / "headers-0", *argv)
    assert r.code == 2 and r.err.splitlines()[0] == f"kdump: error: {message}"


def test_a_range_past_the_end_says_nothing_matched():
    r = run_kdump("dump", GENERATED / "headers-0", "--start-offset", "99999")
    assert r.code == 0
    assert r.err == ("kdump: nothing matched --start-offset 99999: no batch in the files read has offsets or "
                     "times in that range\n")


def _verify_cut_after_one_line(root: Path) -> int:
    p = subprocess.Popen([sys.executable, "-m", "kdump", "verify", str(root)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    p.stdout.readline()
    p.stdout.close()
    return p.wait(timeout=120)


def test_verify_cut_by_head_never_claims_clean(tmp_path):
    root = tmp_path / "logs"
    for i in range(300):                        # more output than a pipe buffer holds
        shutil.copytree(GENERATED / "headers-0", root / f"a-{i}")
    shutil.copytree(GENERATED / "torn-tail-0", root / "z-0")
    assert _verify_cut_after_one_line(root) == 3        # cut before the damage: could not complete
    shutil.copytree(GENERATED / "torn-tail-0", root / "_-0")
    assert _verify_cut_after_one_line(root) == 1        # the damage was checked before the cut


# -- no Python in the output -------------------------------------------------------------------

def test_info_and_metadata_print_no_python_none():
    r = run_kdump("info", REAL / "tuyen-nnt__kafka_2.13-3.0.0" / "data", "--format", "text")
    assert "None" not in r.out and "  batches: 0 records: 0 offsets: -\n" in r.out
    r = run_kdump("dump", REAL / "William0423__kafka" / "kafka-logs" / "meta.properties")
    assert r.out.splitlines()[3:5] == ["cluster_id: (not set)", "directory_id: (not set)"]


def test_info_table_tells_the_log_dirs_apart(tmp_path, monkeypatch):
    for broker in ("b1", "b2", "b3"):
        shutil.copytree(GENERATED / "headers-0", tmp_path / broker / "orders-0")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    r = run_kdump("info", ".", "--format", "table")
    # One table per log dir, the log dir said once above it.
    lines = r.out.splitlines()
    heads = [line for line in lines if line.startswith("kdump info: ")]
    assert heads == ["kdump info: b1", "kdump info: b2", "kdump info: b3"]
    assert [lines[i + 4].split("│")[1].strip() for i, line in enumerate(lines) if line in heads] == ["orders-0"] * 3


def test_recover_apply_says_moved_x_to_y(tmp_path):
    d = tmp_path / "logs" / "t-0"
    shutil.copytree(PINTEREST, d)
    with open(d / f"{SEG0}.log", "r+b") as f:
        f.truncate(5000)                          # a broker deletes the later segments
    r = run_kdump("recover", "--apply", "--yes", d)
    moved = [line for line in r.err.splitlines() if line.startswith("kdump: moved ")]
    assert moved and all(" to " in m and ": to " not in m for m in moved), moved
    assert moved[0].startswith(f"kdump: moved {d}/00000000000000007729.log to {d}/kdump-quarantine-")


def test_terminal_table_shows_invalid_utf8_as_the_replacement_character(tmp_path, monkeypatch):
    from kdump.encode import build_v2_batch

    d = tmp_path / "raw-0"
    d.mkdir()
    (d / f"{SEG0}.log").write_bytes(build_v2_batch([(0, 1_700_000_000_000, b"k\xff", b"caf\xc3\xa9\xff\x01")]))
    monkeypatch.setenv("COLUMNS", "120")
    r = run_kdump("dump", d, "--data", "--format", "table", "--color", "never")
    row = next(line for line in r.out.splitlines() if line.lstrip().startswith("0 "))
    assert "k\ufffd" in row and "café\ufffd\\x01" in row and "\\ufffd" not in r.out


def test_records_without_data_show_sizes_not_payloads(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    r = run_kdump("dump", GENERATED / "headers-0", "--records", "--format", "table", "--color", "never")
    # The header is the line naming the first column (the title above it may take any room).
    header = next(line for line in r.out.splitlines() if line.split()[:1] == ["offset"]).split()
    assert header == ["offset", "time", "(UTC)", "key", "size", "value", "size", "headers", "batch", "ok"]
    assert "trace-id" not in r.out and "null key" not in r.out
    r = run_kdump("dump", GENERATED / "headers-0", "--format", "table", "--color", "never")
    assert any(line.split()[:1] == ["position"] and "max time (UTC)" in line for line in r.out.splitlines())


# -- install paths ------------------------------------------------------------------------------

def test_help_opens_the_manual_page_with_man(monkeypatch):
    import kdump.cli.help as h

    calls = []

    def fake_call(argv):
        calls.append((argv, Path(argv[-1]).read_text()))
        return 0

    monkeypatch.setattr(h.shutil, "which", lambda name: "/usr/bin/man")
    monkeypatch.setattr(h.subprocess, "call", fake_call)
    r = run_kdump("help", "dump")
    assert r.code == 0
    ((argv, page),) = calls
    assert argv[:2] == ["/usr/bin/man", "-l"] and argv[2].endswith("kdump-dump.1")
    assert page == (ROOT / "man" / "kdump-dump.1").read_text()


def test_help_prints_the_page_without_man(monkeypatch):
    import kdump.cli.help as h

    monkeypatch.setattr(h.shutil, "which", lambda name: None)
    r = run_kdump("help", "verify")
    assert r.code == 0 and r.out.startswith("NAME\n       kdump-verify - Check segments")
    assert "\\fB" not in r.out and "       --problems" in r.out
    assert run_kdump("help", "nosuch").code == 2
