"""The index checks' hot loops take the usual entry inline (``OffsetIndexCheck.run``,
``TimeIndexCheck.run``); every other goes through ``_visit`` / ``_entries_in``. Here each real
and generated segment's indexes, as written and damaged in several ways, are checked both with
the inline path and with the general path alone: the results must be the same."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kdump.check.index_file import LAST, MAGIC, MAX_TS, POS, SIZE
from kdump.check.indexes import verify_indexes
from kdump.check.offset_index import OffsetIndexCheck
from kdump.check.time_index import TimeIndexCheck
from kdump.format.index import parse_index
from kdump.format.codecs import DEFAULT_LIMITS
from kdump.format.timeindex import parse_timeindex
from kdump.format.walk import Walker
import kdump.check.indexes as indexes_module

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(p for p in FIXTURES.rglob("*.log")
              if p.with_suffix(".index").is_file() and p.with_suffix(".timeindex").is_file()
              and p.stat().st_size < (8 << 20))


class GeneralOffsetCheck(OffsetIndexCheck):
    """Every batch an entry points into goes to ``_visit`` (the loop before the inline path)."""

    def run(self, batches) -> None:
        next_pos, pending = self.next_pos, self.pending
        last_entry_at, max_skip, prev_last = self.last_entry_at, self.max_skip, self.prev_last
        b = None
        for b in batches:
            s = b[POS]
            if pending or next_pos < s + b[SIZE]:
                self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
                self._visit(b)
                next_pos, pending = self.next_pos, self.pending
                last_entry_at, max_skip = self.last_entry_at, self.max_skip
            elif s > 0 and s - last_entry_at > max_skip:
                max_skip = s - last_entry_at
                self.max_skip_at = (last_entry_at, s)
            prev_last = b[LAST]
        self.last_entry_at, self.max_skip, self.prev_last = last_entry_at, max_skip, prev_last
        if b is not None:
            self.log_last = b[LAST]


class GeneralTimeCheck(TimeIndexCheck):
    """Every entry goes through ``_entries_in`` (the loop before the inline path)."""

    def run(self, batches) -> None:
        max_ts, next_off, prev_last = self.max_ts, self.next_off, self.prev_last
        b = None
        for b in batches:
            mt = b[MAX_TS]
            if mt > max_ts:
                max_ts = self.max_ts = mt
                self.max_at = (b[LAST], b[POS])
                if b[MAGIC] >= 2:
                    self.any_v2 = True
            if next_off <= b[LAST]:
                self.prev_last = prev_last
                self._entries_in(b)
                next_off = self.next_off
            prev_last = b[LAST]
        self.prev_last = prev_last
        if b is not None:
            self.log_last = b[LAST]


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
