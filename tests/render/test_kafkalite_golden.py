"""kdump reproduces the golden output of a peer reader (asayers/kafkalite, Haskell).

kafkalite's test suite reads each ``<topic>-<partition>`` directory from offset 0 and
prints one line per message with ``ppMessage``: ``show offset ++ ": "``, then
``show key ++ ": "`` if there is a key, then ``show value`` or ``<no value>``. ``show``
on a ByteString is Haskell's string literal syntax over the bytes read as Latin-1
characters, so that escaping is reimplemented here to compare byte for byte.
"""

from __future__ import annotations

import os

import pytest

from kdump.format.walk import Walker, decode_records
from kdump.storage.mapped import MappedFile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "fixtures", "real", "asayers__kafkalite", "tests", "test-data")
NAMES = sorted(os.listdir(os.path.join(PEER, "golden")))

# Haskell's names for the control characters 0..31 (GHC.Show.asciiTab), with the
# single-letter escapes showLitChar prefers for some of them.
_ASCII_NAMES = ("NUL SOH STX ETX EOT ENQ ACK a b t n v f r SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB "
                "CAN EM SUB ESC FS GS RS US").split()


def haskell_show_bytes(data: bytes) -> str:
    """``show`` of a strict ByteString, as GHC prints a String literal."""
    out = ['"']
    pending = None      # a trailing numeric escape (or \SO) that the next char could extend
    for b in data:
        c = chr(b)
        # "\&" separates an escape from a following char that would otherwise continue it.
        if pending == "num" and c.isdigit() or pending == "SO" and c == "H":
            out.append("\\&")
        pending = None
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif b > 127:
            out.append(f"\\{b}")
            pending = "num"
        elif b == 127:
            out.append("\\DEL")
        elif b >= 32:
            out.append(c)
        else:
            out.append("\\" + _ASCII_NAMES[b])
            if b == 14:
                pending = "SO"
    out.append('"')
    return "".join(out)


def kafkalite_lines(partition_dir: str) -> str:
    lines = []
    for name in sorted(os.listdir(partition_dir)):
        if not name.endswith(".log"):
            continue
        with MappedFile(os.path.join(partition_dir, name)) as f:
            walker = Walker(f.buf)
            for batch in walker:
                for rec in decode_records(f.buf, batch):
                    line = f"{rec.offset}: "
                    if rec.key is not None:
                        line += haskell_show_bytes(bytes(rec.key)) + ": "
                    line += "<no value>" if rec.value is None else haskell_show_bytes(bytes(rec.value))
                    lines.append(line + "\n")
            assert walker.stop is None, walker.stop
    return "".join(lines)


def test_haskell_show_escapes():
    assert haskell_show_bytes(b'a"b\\c\td') == '"a\\"b\\\\c\\td"'
    assert haskell_show_bytes(b"\xc3\xa91") == '"\\195\\169\\&1"'
    assert haskell_show_bytes(b"\x0eH\x7f\x00") == '"\\SO\\&H\\DEL\\NUL"'


def test_all_four_sets_present():
    assert NAMES == ["hamlet-gzip-0", "hamlet-none-0", "hamlet-snappy-0", "numbers-0"]


@pytest.mark.parametrize("name", NAMES)
def test_matches_golden(name):
    with open(os.path.join(PEER, "golden", name), "rb") as f:
        golden = f.read().decode("utf-8")
    ours = kafkalite_lines(os.path.join(PEER, "fs-data", name))
    if ours != golden:
        mine, theirs = ours.splitlines(), golden.splitlines()
        for i, (a, b) in enumerate(zip(mine, theirs)):
            assert a == b, f"line {i + 1} differs"
        assert len(mine) == len(theirs)
    assert ours == golden
