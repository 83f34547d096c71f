"""The index checks' hot loops take the usual entry inline (``OffsetIndexCheck.run``,
``TimeIndexCheck.run``); every other goes through ``_visit`` / ``_entries_in``. Here each real
and generated segment's indexes, as written and damaged in several ways, are checked both with
the inline path and with the general path alone: the results must be the same."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import kdump.check.indexes.forward_pass as indexes_module
from kdump.check.indexes.forward_pass import verify_indexes
from kdump.check.indexes.index_file import LAST, MAGIC, MAX_TS, POS, SIZE
from kdump.check.indexes.offset_index import OffsetIndexCheck
from kdump.check.indexes.time_index import TimeIndexCheck
from kdump.format.codecs import DEFAULT_LIMITS
from kdump.format.index import parse_index
from kdump.format.timeindex import parse_timeindex
from kdump.format.walk import Walker

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(p for p in FIXTURES.rglob("*.log")
              if p.with_suffix(".index").is_file() and p.with_suffix(".timeindex").is_file()
              and p.stat().st_size < (8 << 20))


class GeneralOffsetCheck(OffsetIndexCheck):
    """Every batch an entry points into goes to ``_visit`` (state kept on the object)."""

    def run(self, batches) -> None:
        for b in batches:
            s = b[POS]
            if self.pending or self.next_pos < s + b[SIZE]:
                self._visit(b)
            elif s > 0 and s - self.last_entry_at > self.max_skip:
                self.max_skip, self.max_skip_at = s - self.last_entry_at, (self.last_entry_at, s)
            self.prev_last = self.log_last = b[LAST]


class GeneralTimeCheck(TimeIndexCheck):
    """Every entry goes through ``_entries_in`` (state kept on the object)."""

    def run(self, batches) -> None:
        for b in batches:
            if b[MAX_TS] > self.max_ts:
                self.max_ts, self.max_at = b[MAX_TS], (b[LAST], b[POS])
                self.any_v2 = self.any_v2 or b[MAGIC] >= 2
            if self.next_off <= b[LAST]:
                self._entries_in(b)
            self.prev_last = self.log_last = b[LAST]


def _variants(data: bytes, fmt: str) -> list[bytes]:
    """The file as written, and damaged: offsets shifted down and up, two slots swapped, a slot
    repeated, the last slot dropped, the first dropped."""
    entry = struct.Struct(fmt)
    slots = [list(s) for s in entry.iter_unpack(data[:len(data) - len(data) % entry.size])]
    rel = 0 if fmt == ">ii" else 1        # the relative offset's field

    def pack(rows) -> bytes:
        return b"".join(entry.pack(*r) for r in rows)

    out = [data]
    if slots:
        for delta in (-1, 1):
            out.append(pack([r[:rel] + [r[rel] + delta] + r[rel + 1:] for r in slots]))
        out.append(pack(slots + [slots[-1]]))
        out.append(pack(slots[:-1]))
        out.append(pack(slots[1:]))
    if len(slots) > 1:
        out.append(pack([slots[1], slots[0]] + slots[2:]))
    return out


@pytest.mark.parametrize("log", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_inline_paths_give_what_the_general_ones_do(log: Path, monkeypatch) -> None:
    buf = log.read_bytes()
    base = int(log.stem)
    for index in _variants(log.with_suffix(".index").read_bytes(), ">ii"):
        for timeindex in _variants(log.with_suffix(".timeindex").read_bytes(), ">qi"):
            idx, tix = parse_index(index, base), parse_timeindex(timeindex, base)
            for convention in (True, False):
                fast = _outcome(buf, base, idx, tix, convention)
                with monkeypatch.context() as m:
                    m.setattr(indexes_module, "OffsetIndexCheck", GeneralOffsetCheck)
                    m.setattr(indexes_module, "TimeIndexCheck", GeneralTimeCheck)
                    general = _outcome(buf, base, idx, tix, convention)
                assert fast == general


def _outcome(buf, base, idx, tix, convention):
    """What ``verify_indexes`` returns, or the error it raises (an entry at position 0 of a
    log whose other entries leave no skip makes ``_interval`` fail, both ways alike)."""
    try:
        return verify_indexes(buf, base, idx, tix, convention=convention)
    except TypeError as e:
        return repr(e)


def test_fixtures_take_the_inline_paths() -> None:
    """The comparison above means something: most of the fixtures' entries take the inline paths."""
    calls = {"general": 0, "entries": 0}

    class CountingOffsets(OffsetIndexCheck):
        def _visit(self, b):
            calls["general"] += 1
            super()._visit(b)

    class CountingTimes(TimeIndexCheck):
        def _entries_in(self, b):
            calls["general"] += 1
            super()._entries_in(b)

    for log in LOGS:
        buf = log.read_bytes()
        base = int(log.stem)
        batches = list(Walker(buf))
        for check in (CountingOffsets(base, parse_index(log.with_suffix(".index").read_bytes(), base), None),
                      CountingTimes(buf, base, parse_timeindex(log.with_suffix(".timeindex").read_bytes(), base),
                                    DEFAULT_LIMITS)):
            check.budget = 0
            check.run(batches)
            calls["entries"] += check.t
    assert calls["general"] < calls["entries"] / 2
