"""Exits: a 5,000-digit number in a log dir's text files gave ``internal error:
ValueError`` (Python's int() refuses more than 4,300 digits). Every number goes through
``format.javanumber.java_int``, with Kafka's range for the field: a located one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdump.format.javanumber import INT32, INT64, java_int
from support.damage import make_partition
from support.run import run_kdump

BIG = "9" * 5000
CLIPPED = "9" * 118 + f"... ({5002 - 120} more characters)"


def test_java_int_takes_what_java_takes():
    assert java_int("0" * 5000 + "7") == 7                     # leading zeros, as parseInt
    assert java_int("-2147483648") == INT32[0] and java_int("2147483648") is None
    assert java_int("9223372036854775807", INT64) == INT64[1] and java_int("9223372036854775808", INT64) is None
    assert java_int(BIG, INT64) is None and java_int("-" + BIG, INT64) is None
    assert java_int("+1") == 1 and java_int("1_0") is None and java_int("") is None and java_int("٣") is None


# file (relative to the log dir), its text, the line `dump FILE` prints
CASES = {
    "leader-epoch": ("orders-0/leader-epoch-checkpoint", f"0\n1\n0 {BIG}\n",
                     ":3: Malformed line in checkpoint file [{f}]: 0 " + CLIPPED),
    "recovery-point": ("recovery-point-offset-checkpoint", f"0\n1\norders 0 {BIG}\n",
                       ":3: Malformed line in checkpoint file [{f}]: orders 0 " + "9" * 111
                       + f"... ({5009 - 120} more characters)"),
    "log-start": ("log-start-offset-checkpoint", f"0\n{BIG}\n",
                  ":2: Malformed line in checkpoint file [{f}]: " + "9" * 120 + f"... ({5000 - 120} more characters)"),
    "partition.metadata": ("orders-0/partition.metadata", f"version: {BIG}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
                           ":1: Malformed line in partition metadata file [partition.metadata]: version: " + "9" * 111
                           + f"... ({5009 - 120} more characters)"),
    "meta.properties": ("meta.properties", f"version=1\nnode.id={BIG}\ncluster.id=x\n",
                        ": Unable to read node.id as a base-10 number."),
    "quorum-state": ("quorum-state", '{"leaderId": %s}' % BIG,
                     ":0: quorum-state: the number 99999999999999999999... (5000 digits) is past Kafka's int64 range"),
}


def _log_dir(tmp_path: Path, case: str) -> tuple[Path, Path]:
    rel, text, _ = CASES[case]
    root = tmp_path / "logs"
    make_partition(root)
    (root / rel).write_text(text)
    return root, root / rel


@pytest.mark.parametrize("case", list(CASES))
def test_dump_of_the_file_is_one_located_line(tmp_path, case):
    _, f = _log_dir(tmp_path, case)
    r = run_kdump("dump", "--json", str(f))
    assert (r.code, r.out) == (1, "")
    assert r.err == f"kdump: error: {f}{CASES[case][2].format(f=f)}\n"


@pytest.mark.parametrize("command", [["verify"], ["verify", "--json"], ["info"], ["recover"]])
@pytest.mark.parametrize("case", list(CASES))
def test_log_dir_commands_never_crash(tmp_path, case, command):
    root, f = _log_dir(tmp_path, case)
    r = run_kdump(*command, str(root))
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err
    assert r.code in (0, 1), r.err
    if command[0] == "verify" and case != "recovery-point" and case != "log-start":
        assert r.code == 1, r.err      # (a bad offset checkpoint is an anomaly: the broker resets it)
