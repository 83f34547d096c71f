"""The progress bar with -j: workers' reads move the parent's bar by bytes as they
happen, not a partition at a time, and the bar ends at the total, never going back."""

from __future__ import annotations

import io
import sys
import time

import pytest

from kdump.jobs.fanout import ordered_map
from kdump.render import progress as P
from kdump.render.output import Output
from kdump.storage.mapped import MappedFile
from support.run import GENERATED


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(P, "SHOW_AFTER", 0.0)
    monkeypatch.setattr(P, "POLL", 0.02)
    monkeypatch.delenv("KDUMP_NO_PROGRESS", raising=False)
    # stderr a terminal: set in the test itself (pytest's capture resets it after fixtures)
    return lambda: monkeypatch.setattr(sys, "stderr", Tty())


def _recording(monkeypatch) -> list[tuple[int, int]]:
    """(bytes of units handed back, bytes in flight in workers) at every redraw of the bar."""
    seen = []
    real = P.Progress._show

    def show(self):
        seen.append((self.completed, self._shared.get_obj().value if self._shared is not None else 0))
        real(self)
    monkeypatch.setattr(P.Progress, "_show", show)
    return seen


def test_a_workers_reads_move_the_bar_before_its_unit_comes_back(tmp_path, terminal, monkeypatch):
    terminal()
    monkeypatch.setattr(P, "FLUSH_BYTES", 1)
    files = []
    for i in range(2):
        f = tmp_path / f"{i}.log"
        f.write_bytes(bytes(8 << 20))           # mapped (not read into memory): the mapping reports
        files.append(str(f))
    seen = _recording(monkeypatch)

    def unit(path):
        with MappedFile(path) as mf:
            mf.buf.follow(3 << 20)              # a sequential reader got this far
            time.sleep(0.5)                     # ... and is still at work on the unit
            mf.buf.follow(8 << 20)
        return path

    out = Output(False, "text", stream=io.StringIO())
    with P.Progress.for_paths(out, files, "verify") as progress:
        results = []
        for result, counted in ordered_map(progress.counted(unit), files, 2):
            results.append(result)
            assert counted == 8 << 20
            progress.unit_done([result], counted)
        assert progress._shared.get_obj().value == 0
        assert progress.completed == progress.total == 16 << 20
    assert results == files
    # the bar moved by bytes while no unit had come back yet
    assert any(done == 0 and 0 < flight < 16 << 20 for done, flight in seen), seen[:20]
    shown = [min(done + flight, 16 << 20) for done, flight in seen]
    assert shown == sorted(shown), "the bar went back"


def test_the_verify_bar_ends_at_the_total_with_workers(tmp_path, terminal, monkeypatch):
    from kdump.run.verify import run_verify

    terminal()
    totals = []
    real = P.Progress.close

    def close(self):
        totals.append((self.completed, self.total, self._shared.get_obj().value if self._shared else 0))
        real(self)
    monkeypatch.setattr(P.Progress, "close", close)
    stream = io.StringIO()
    paths = [str(GENERATED / d) for d in ("zstd-v2-0", "gzip-v2-0", "transactions-0")]
    code = run_verify(paths, Output(False, "text", stream=stream), jobs=2)
    one = io.StringIO()
    assert run_verify(paths, Output(False, "text", stream=one), jobs=1) == code == 0
    assert stream.getvalue() == one.getvalue()          # stdout as with -j 1
    total = sum(f.stat().st_size for d in paths for f in __import__("pathlib").Path(d).iterdir() if f.is_file())
    assert totals[0] == (total, total, 0)


def test_no_shared_counter_without_a_bar(monkeypatch):
    monkeypatch.setenv("KDUMP_NO_PROGRESS", "1")
    out = Output(False, "text", stream=io.StringIO())
    with P.Progress.for_output(out, 100, "verify") as progress:
        assert list(ordered_map(progress.counted(lambda u: u * 2), [1, 2, 3], 2)) == [(2, 0), (4, 0), (6, 0)]
        assert progress._shared is None and progress._poller is None
