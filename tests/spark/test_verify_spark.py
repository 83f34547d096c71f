"""``kdump verify --engine spark`` gives the local verify's findings and exit status."""

from __future__ import annotations

import shutil

import pytest
from sparkkit import FIXTURES, GENERATED, run_cli

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REAL = FIXTURES / "real"


def both(*args):
    local = run_cli("verify", "--json", *args)
    spark = run_cli("verify", "--json", "--engine", "spark", "--master", "local[2]", *args)
    return local, spark


def _damaged_tree(tmp_path):
    """zstd-v2 with the second segment renamed below the first one's end (an overlap), and a
    corrupted copy of gzip-v2 (one flipped byte inside the first batch)."""
    root = tmp_path / "logs"
    a = root / "zstd-v2-0"
    shutil.copytree(GENERATED / "zstd-v2-0", a)
    for ext in (".log", ".index", ".timeindex"):
        (a / f"00000000000000000012{ext}").rename(a / f"00000000000000000010{ext}")
    b = root / "gzip-v2-0"
    shutil.copytree(GENERATED / "gzip-v2-0", b)
    data = bytearray((b / "00000000000000000000.log").read_bytes())
    data[80] ^= 0x55
    (b / "00000000000000000000.log").write_bytes(bytes(data))
    return root


def test_same_findings_and_status_as_local(spark, tmp_path):
    damaged = _damaged_tree(tmp_path)
    paths = [str(GENERATED), str(REAL / "DonaldY__kafka-2.7.1" / "kafka-logs"),
             str(REAL / "getachew015__kafka-broker" / "data" / "kafka"), str(damaged)]
    (lcode, lout, lerr), (scode, sout, serr) = both(*paths)
    assert scode == lcode == 1
    assert sout == lout
    assert serr.splitlines()[-1] == lerr.splitlines()[-1]
    assert '"kind":"offset_overlap"' in sout


def test_deep_and_single_files(spark, tmp_path):
    damaged = _damaged_tree(tmp_path)
    args = ["--deep", str(GENERATED / "transactions-0"), str(damaged / "zstd-v2-0" / "00000000000000000010.log"),
            str(damaged / "zstd-v2-0" / "00000000000000000000.index")]
    (lcode, lout, _), (scode, sout, _) = both(*args)
    assert (scode, sout) == (lcode, lout)


def test_a_missing_path_is_reported_like_local(spark, tmp_path):
    (lcode, lout, lerr), (scode, sout, serr) = both(str(tmp_path / "nope"), str(GENERATED / "zstd-v2-0"))
    assert (scode, sout) == (lcode, lout) and lcode == 3
    assert "nope" in serr.splitlines()[0]


def test_a_file_named_twice_is_checked_once_like_local(spark):
    seg = str(GENERATED / "zstd-v2-0" / "00000000000000000000.log")
    (lcode, lout, _), (scode, sout, _) = both(seg, str(GENERATED / "zstd-v2-0"), seg)
    assert (scode, sout) == (lcode, lout) and lcode == 0
    assert sum(f'"file":"{seg}"' in line for line in sout.splitlines()) == 1


class _Tty(__import__("io").StringIO):
    def isatty(self):
        return True


def test_the_local_progress_bar_on_a_terminal(spark, monkeypatch):
    """On a terminal the Spark engine shows the local verify's bar (label, bytes, rate, eta),
    moved by the bytes Spark's tasks scanned, and ends at the total; stdout is unchanged."""
    from kdump.render import progress
    from support.run import run_kdump

    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    monkeypatch.delenv("KDUMP_NO_PROGRESS", raising=False)
    ends = []
    close = progress.Progress.close

    def record(self):
        ends.append((self.label, self.completed, self.total))
        close(self)
    monkeypatch.setattr(progress.Progress, "close", record)
    paths = [str(GENERATED / "zstd-v2-0"), str(GENERATED / "transactions-0")]
    r = run_kdump("verify", "--engine", "spark", "--master", "local[2]", "--format", "text", *paths, err=_Tty())
    local = run_kdump("verify", "--format", "text", *paths)
    assert (r.code, r.out) == (local.code, local.out) == (0, local.out)
    assert "kdump verify" in r.err and "/s" in r.err and "eta" in r.err, r.err[-500:]
    total = sum(f.stat().st_size for d in paths for f in __import__("pathlib").Path(d).iterdir() if f.is_file())
    assert ends[0] == ("verify", total, total)
