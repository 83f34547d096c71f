"""kdump's gap report (``kdump.check.gaps``) in words: a block of DumpLogSegments' closing report."""

from __future__ import annotations

from kdump.check.gaps import GapReport, PartitionGaps
from kdump.check.indexes.dls_view import SUMMARY_NON_CONSECUTIVE
from kdump.render.escape import printable
from kdump.storage.logdir import LogFile

LISTED_PER_FILE = 20


def gap_lines(report: GapReport | None) -> list[str]:
    """One line per unexplained gap (at most ``LISTED_PER_FILE`` a file), then one for those the cleaner explains."""
    if report is None:
        return []
    lines: list[str] = []
    for path, shown, count in report.shown:
        name = printable(path)
        lines += [f"kdump: non-consecutive offsets in {name}: {a} is followed by {b}"
                  for a, b in shown[:LISTED_PER_FILE]]
        if count > LISTED_PER_FILE:
            lines.append(f"kdump: {count - LISTED_PER_FILE} more non-consecutive offsets in {name} "
                         f"not listed")
    if report.explained:
        n = report.explained
        lines.append(f"kdump: {n} offset gap{'s' if n != 1 else ''} in {printable(report.directory)} explained by "
                     f"compaction (cleaned up to offset {report.cleaned}) not listed")
    return lines


def gap_summary(gaps: PartitionGaps | None) -> list[tuple[int, list[str]]]:
    """The report as a block of DumpLogSegments' closing report (printed after all files)."""
    lines = gap_lines(gaps.report()) if gaps is not None else []
    return [(SUMMARY_NON_CONSECUTIVE, lines)] if lines else []


class GapReporter:
    """kdump's own gap report (JSON and table views, with --records): fed per file, shown
    on stderr after all files."""

    gaps: PartitionGaps | None = None

    def _begin_gaps(self, f: LogFile) -> None:
        if self.gaps is not None:
            self.gaps.begin_file(f)

    def _gap_records(self, records) -> None:
        if records and self.gaps is not None:
            self.gaps.records(records)

    def _end_gaps(self) -> None:
        if self.gaps is not None:
            self.gaps.end_file()

    def resume(self) -> None:
        """A piece of a partition after its first (``dump -j`` on one segment)."""
        if self.gaps is not None:
            self.gaps.resume()

    @property
    def summary(self) -> list[tuple[int, list[str]]]:
        return gap_summary(self.gaps)
