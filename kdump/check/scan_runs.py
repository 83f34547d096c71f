"""The segment scanner's runs of plain batches handed to C (scan.c's ``scan_plain_run``):
from byte 0 of a named segment, and after each batch the Python walk takes
(``kdump.check.scan._Scan.walk``), a chunk at a time. The state carried to C and back is
the scan's own (``SegmentChecks``, its ``IndexStep``)."""

from __future__ import annotations

from kdump import _accel
from kdump.check.segment_checks import SegmentChecks
from kdump.format.index import INT32_MAX
from kdump.format.walk import need_of

# Per call: at most this many batches and bytes (a batch crossing the byte bound is left
# to the next call, or to Python if it alone is larger), so that a call stays short.
PLAIN_RUN_CHUNK = 1 << 16
PLAIN_RUN_BYTES = 32 << 20


class PlainRuns(SegmentChecks):
    """The scan's hand-offs to ``scan_plain_run``."""

    def plain_start(self) -> int:
        """With the C accelerator, a named segment's plain batches from byte 0 go to C as
        ``walk``'s later ones do: a first batch that is plain with its offsets from the base on
        passes ``batch``'s checks without a finding and reaches the base at byte 0 (nothing
        counted before it). Returns where the walk goes on."""
        native = _accel.native()
        if native is None or self.deep or self.base is None:
            return 0
        at, _ = self.plain_runs(native.scan_plain_run, 0, self.base - 1, self.base + INT32_MAX)
        if at:
            self.reach_base_at, self.kept_before = 0, (0, 0, None, None, 0, 0)
            self.r.first_offset = int.from_bytes(self.buf[0:8], "big", signed=True)
        return at

    def plain_runs(self, plain_run, at: int, lo: int, hi: int) -> tuple[int, int]:
        """``scan_plain_run`` from ``at`` a chunk at a time while it takes batches: (where it
        stopped, the last offset taken, else ``lo``)."""
        buf, end, st = self.buf, self.end, self.step
        # A large mapping drops pages behind the scan (bytes ask nothing: a failed getattr costs).
        follow = None if type(buf) in (bytes, memoryview) else getattr(buf, "follow", None)
        need = need_of(buf)
        while at < end:     # (at the end C would take nothing)
            stop = min(end, at + PLAIN_RUN_BYTES)
            if need is not None:
                need(at, stop)
            run = plain_run(buf, at, stop, PLAIN_RUN_CHUNK, hi, self.max_size,
                            st.interval, self.r.epochs, self.plain_state(lo))
            if run is None:
                break
            at, state = run
            lo = self.set_plain_state(state)
            if follow is not None:
                follow(at)
        return at, lo

    def plain_state(self, lo: int) -> tuple:
        """The state ``scan_plain_run`` carries on (its docstring gives the order)."""
        st, r = self.step, self.r
        return (st.valid, st.last_entry_at, lo, self.prev_epoch, st.max_ts, st.max_ts_offset, r.batches, r.records,
                st.index_last, st.time_last)

    def set_plain_state(self, state: tuple) -> int:
        """The state ``scan_plain_run`` hands back, taken in; returns the last offset taken."""
        st, r = self.step, self.r
        (st.valid, st.last_entry_at, lo, self.prev_epoch, st.max_ts, st.max_ts_offset, r.batches, r.records,
         st.index_last, st.time_last) = state
        r.last_offset = self.prev_last = lo
        return lo
