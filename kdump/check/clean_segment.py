"""The usual segment judged in one call: small, plain v2 batches from its first byte to its
last, and its ``.index`` and ``.timeindex`` holding the usual entries.

C (segfiles.c's ``clean_segment_files``) reads the three files, runs the scanner's plain run
over the whole segment (``PlainRuns.plain_start``, kdump/check/scan_runs.py) and proves the
index files clean against it (``index_clean``, as ``forward_pass.index_findings`` asks). What
is left is the scanner's last step, here: the time index's closing entry
(``SegmentChecks.final_time_entry``). The report is the one ``scan_file`` gives the same
file, and the index checks are those ``segment_index_findings`` gives: none
(tests/speedups/test_clean_segment.py checks both against the Python path).

Anything else is None, and the caller takes the Python path: a remote file or a layout's view,
an ``--io-limit`` (those reads are counted), a file above ``READ_BELOW`` (it is mapped), an
index above ``SLICED_ABOVE`` (read a slice at a time), a batch the plain run does not take, an
entry that is not the usual one, any error.
"""

from __future__ import annotations

from kdump import _accel
from kdump.check.broker_rule import IndexStep
from kdump.check.scan import ScanReport
from kdump.storage import gentle, views
from kdump.storage.mapped import READ_BELOW
from kdump.storage.remote import is_remote
from kdump.storage.slice_reader import SLICED_ABOVE


def clean_segment(path: str, base: int, index: str | None, timeindex: str | None, max_size: int,
                  interval: int) -> tuple[ScanReport, dict[str, int]] | None:
    """The scan report of the segment at ``path`` (base offset ``base``) and the size of each
    index file checked (``index``/``timeindex``: its path, or None: not checked, as when it
    is not there), when it is the usual segment; None otherwise."""
    native = _accel.native()
    if native is None or is_remote(path) or gentle.active() or views.has(path) or \
            (index is not None and views.has(index)) or (timeindex is not None and views.has(timeindex)):
        return None
    got = native.clean_segment_files(path, index, timeindex, base, max_size, interval, READ_BELOW, SLICED_ABOVE)
    if got is None:
        return None
    size, index_size, timeindex_size, first, state, epochs = got
    step = IndexStep(interval)
    (step.valid, step.last_entry_at, last, _, step.max_ts, step.max_ts_offset, batches, records, step.index_last,
     step.time_last) = state
    if step.time_last is not None and step.finish() is not None:
        return None         # InvalidOffsetException at the closing entry: the scanner's finding
    report = ScanReport(file=path, size=size, base_offset=base, valid_bytes=step.valid, batches=batches,
                        records=records, first_offset=first, last_offset=last, max_timestamp=step.max_ts,
                        epochs=epochs)
    sizes = {}
    if index is not None:
        sizes[index] = index_size
    if timeindex is not None:
        sizes[timeindex] = timeindex_size
    return report, sizes
