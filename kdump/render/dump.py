"""Renderers of ``kdump dump``: the same events drawn as text, NDJSON or Rich tables
(``kdump.render.tabledump``).

A renderer gets ``begin_file``, ``item`` (one batch with its records), ``side`` (the
rows of an index, checkpoint or metadata file) and ``end_file``; it only draws.
"""

from __future__ import annotations

from typing import Any, TextIO

from kdump import _accel
from kdump.check.gaps import PartitionGaps, follow
from kdump.check.indexes.dls_view import SUMMARY_TIME_NOT_FOUND
from kdump.decoders import kafka_lines as K
from kdump.decoders.views import PayloadView
from kdump.export import ndjson
from kdump.format.records import LargeRecords
from kdump.render import jsonout, text
from kdump.render.gaps import GapReporter, gap_summary
from kdump.render.line_buffer import FLUSH_CHARS, FLUSH_LINES, ByteLines, Lines
from kdump.render.tabledump import TableDump  # noqa: F401 - the third view, beside the two here
from kdump.storage.logdir import PRODUCER_SNAPSHOT, LogFile
from kdump.storage.record_reader import Item

GAPS_COMPACT_ABOVE = 100_000    # DumpLogSegments' gaps kept as pairs; one per previous offset past this
RUN_BATCHES = 1 << 16           # batches a run writer (of the reader's Spans) takes per C call, at most


class TextDump:
    """kafka-dump-log.sh lines.

    With ``dls`` (its own command line, --files) the closing report lists every gap as
    Kafka's does, ``-1 is followed by <first offset>`` included; else kdump's gap report
    (``gaps``), as in the other views. A batch is drawn by the C twin (text.c) where the view
    lets it (``text.c_mode``), else by ``text.item_lines``; a batch streamed a slice of
    records at a time (a record-count bomb) the same way, a slice at a time.
    """

    def __init__(self, stream: TextIO, view: PayloadView, records: bool, data: bool,
                 skip_metadata: bool = False, gaps: PartitionGaps | None = None, dls: bool = True) -> None:
        self.out = ByteLines(stream)
        self.view = view
        self.records = records
        self.data = data
        self.skip_metadata = skip_metadata
        self.dls = dls
        self.gaps = None if dls else gaps
        self.blocks: list[tuple[int, Any]] = []      # stderr blocks, printed after all files
        self._gaps: list[tuple[int, int]] = []        # DumpLogSegments' gaps of the file (with dls)
        self._follow: list[tuple[int, int]] | None = None
        self._last_offset = -1
        self._c_item = None
        self._c_mode = 0

    def _choose(self, view: PayloadView) -> None:
        self.view = view
        self._gaps = []
        self._follow = self._gaps if self.dls else None     # where DumpLogSegments' gaps go
        # The C renderer (text.c_mode says which views it draws), chosen once per file.
        c = _accel.native()
        mode = text.c_mode(view, self.data, not self.skip_metadata)
        self._c_item = c.text_item if c is not None and mode is not None else None
        self._c_mode = mode

    def begin_file(self, f: LogFile, view: PayloadView) -> None:
        self._choose(view)
        self._last_offset = -1
        if self.gaps is not None:
            self.gaps.begin_file(f)
        self.out.add(text.dumping_line(f.path))
        if f.kind in ("log", "kraft_snapshot"):
            if view.internal is None:
                for line in view.notices:
                    self.out.add(line)
            start = text.start_line(f.path)
            if start is not None:
                self.out.add(start)

    def raw_writer(self):
        """The writer of the reader's Raw records of legacy wrappers (run/dump.py hands it each):
        text.c's text_legacy_set drawing one from its decompressed inner set without making its
        records (None: this view is not C's); ``item`` then gets the offsets it drew."""
        if self._c_item is None:
            return None
        legacy_set, out, mode, follow = _accel.native().text_legacy_set, self.out, self._c_mode, self._follow

        def raw(batch, data, log_append_ts=None):
            return legacy_set(out.buf, batch, data, log_append_ts, mode, self._last_offset, follow)
        raw.v2 = False      # v2 batches: the run writer takes the plain ones, the rest are decoded
        return raw

    def run_writer(self):
        """The writer of the reader's Spans (run/dump.py hands it each): text.c's text_v2_run
        drawing the plain v2 batches from a position straight from the segment's bytes, as
        ``item`` would draw them; it answers where it stopped (None: this view is not C's)."""
        if self._c_item is None:
            return None
        text_run, out, mode, follow = _accel.native().text_v2_run, self.out, self._c_mode, self._follow

        def run(buf, pos, end, max_records):
            pos, first, last = text_run(out.buf, buf, pos, end, RUN_BATCHES, max_records, mode, self._last_offset,
                                        follow, FLUSH_CHARS)
            if first is not None:
                self._last_offset = last
                if self.gaps is not None:
                    self.gaps.span(first, last)
            if len(out.buf) >= FLUSH_CHARS:
                out.write()
            return pos
        return run

    def item(self, f: LogFile, it: Item) -> None:
        batch, records, _ = it
        if type(records) is tuple:      # drawn by raw_writer's C function: (first, last offset)
            first, last = records
            self._last_offset = last
            if self.gaps is not None:
                self.gaps.span(first, last)
            if len(self.out.buf) >= FLUSH_CHARS:
                self.out.write()
            return
        if records is not None:
            if self.gaps is not None:
                self.gaps.records(records)
        if self._c_item is not None:
            # (DumpLogSegments' gaps followed in C too; records None: nothing to follow)
            buf = self.out.buf
            last = self._c_item(buf, batch, records, self._c_mode, self._last_offset, self._follow)
            if last is not None:
                self._last_offset = last
                if len(buf) >= FLUSH_CHARS:
                    self.out.write()
                return
        if records is not None and self._follow is not None:
            self._last_offset = follow(records, self._last_offset, self._follow)
        for line in text.item_lines(batch, records, self.view, self.data, not self.skip_metadata):
            self.out.add(line)

    def slice(self, f: LogFile, it: Item, first: bool) -> None:
        """Records of a batch streamed a slice at a time (after its batch line if ``first``)."""
        records = it.records
        if first:
            self.out.add(text.batch_line(it.batch))
        if not records:
            return
        if self.gaps is not None:
            self.gaps.records(records)
        if self._c_item is not None:
            # text.c's lines for the slice's records (the batch line was drawn before the first
            # slice); None: a record only Python draws
            buf = self.out.buf
            last = self._c_item(buf, it.batch, records, self._c_mode | text.C_RECORDS_ONLY, self._last_offset,
                                self._follow)
            if last is not None:
                self._last_offset = last
                if self._follow is not None and len(self._follow) > GAPS_COMPACT_ABOVE:
                    self._follow[:] = dict(self._follow).items()
                if len(buf) >= FLUSH_CHARS:
                    self.out.write()
                return
        if self._follow is not None:
            self._last_offset = follow(records, self._last_offset, self._follow)
            if len(self._follow) > GAPS_COMPACT_ABOVE:      # Kafka keeps one per previous offset
                self._follow[:] = dict(self._follow).items()
        view, data, add = self.view, self.data, self.out.add
        for r in records:
            k, v = view.text(r) if data and r.control is None else (None, None)
            add(text.record_line(r, k, v, not self.skip_metadata, view.escape, view.kafka))

    def end_batch(self, f: LogFile, it: Item) -> None:
        """A streamed batch has ended (its error, if any, is reported with the file's)."""

    def side(self, f: LogFile, rows: list[dict[str, Any]], lines: list[str]) -> None:
        snapshot_space = f.kind == PRODUCER_SNAPSHOT and not self.view.kafka.has(K.SNAPSHOT_NO_TRAILING_SPACE)
        for line in lines:
            # The Scala tool wrote "lastTimestamp: N " before the batch metadata it may not have.
            self.out.add(line + " " if snapshot_space and " firstSequence: " not in line else line)

    def end_file(self, f: LogFile, trailing: int) -> None:
        if trailing > 0:
            self.out.add(text.trailing_line(f.path, trailing))
        block = text.non_consecutive_block(f.path, self._gaps, self.view.kafka) if self._gaps else None
        if block is not None:
            self.blocks.append(block)
        self._gaps = []
        self._follow = self._gaps if self.dls else None
        if self.gaps is not None:
            self.gaps.end_file()

    def add_summary(self, blocks: list[tuple[int, list[str]]]) -> None:
        if not self.view.kafka.has(K.TIME_INDEX_NOT_FOUND_NAMES_FILE):
            blocks = [(kind, ["The following indexed offsets are not found in the log.", *block[1:]])
                      if kind == SUMMARY_TIME_NOT_FOUND else (kind, block) for kind, block in blocks]
        self.blocks.extend(blocks)

    @property
    def summary(self) -> list[tuple[int, Any]]:
        return self.blocks + gap_summary(self.gaps)

    def finish(self) -> None:
        self.out.flush()


class JsonDump(GapReporter):
    """NDJSON: one object per batch (or per side-file row)."""

    def __init__(self, stream: TextIO, view: PayloadView, gaps: PartitionGaps | None = None) -> None:
        self.out = Lines(stream)
        self.view = view
        self.gaps = gaps            # kdump's gap report, with --records
        self._file_json = "null"
        self._c_line = None
        self._c_encoding = -1

    def begin_file(self, f: LogFile, view: PayloadView) -> None:
        self.view = view
        self._file_json = ndjson.dumps(f.path)
        self._begin_gaps(f)
        # The C line writer, when this view lets it write lines (jsonout.batch_line's own test,
        # taken once per file instead of once per batch).
        encoding = jsonout.C_ENCODINGS.get(view.encoding)
        c = _accel.native()
        self._c_line = c.json_batch_line if c is not None and view.plain and encoding is not None else None
        self._c_encoding = encoding

    def continue_file(self, f: LogFile, view: PayloadView) -> None:
        """A range of ``f`` after its first (``dump -j`` on one segment)."""
        gaps, self.gaps = self.gaps, None
        self.begin_file(f, view)
        self.gaps = gaps
        if gaps is not None:
            gaps.resume(f)

    def raw_writer(self):
        """The writer of the reader's Raw records (run/dump.py hands it each): a v2 batch's line
        written by C straight from its (decompressed) records section (json_v2_line), or a legacy
        wrapper's from its inner set, without making its records; None: not this view."""
        if self._c_line is None or not self._file_json.isascii():
            return None
        c, file_json, encoding = _accel.native(), self._file_json, self._c_encoding
        v2_line, legacy_line = c.json_v2_line, c.json_legacy_line

        def raw(batch, data, log_append_ts=None):
            if len(data) > ndjson.STREAM_ABOVE:
                return None
            if batch[5] < 2:        # (magic) a legacy wrapper's inner set
                return legacy_line(file_json, batch, data, log_append_ts, encoding)
            return v2_line(file_json, batch, data, encoding)
        return raw

    def run_writer(self):
        """The writer of the reader's Spans (run/dump.py hands it each): jsonout.c's json_v2_run
        writing the lines of the plain v2 batches from a position straight from the segment's
        bytes, as ``raw_writer``'s function would write them one by one; it answers where it
        stopped (None: not this view)."""
        if self._c_line is None or not self._file_json.isascii():
            return None
        json_run, file_json, encoding, out = _accel.native().json_v2_run, self._file_json, self._c_encoding, self.out

        def run(buf, pos, end, max_records):
            lines, pos, first, last = json_run(file_json, buf, pos, end, RUN_BATCHES, max_records,
                                               ndjson.STREAM_ABOVE, encoding, FLUSH_CHARS)
            if lines is not None:
                if self.gaps is not None:
                    self.gaps.span(first, last)
                out.buf.append(lines)
                out.chars += len(lines)
                if len(out.buf) >= FLUSH_LINES or out.chars >= FLUSH_CHARS:
                    out.write()
            return pos
        return run

    def item(self, f: LogFile, it: Item) -> None:
        batch, records, error = it
        if type(records) is tuple:      # written by raw_writer's C function: (line, first, last)
            line, first, last = records
            if self.gaps is not None:
                self.gaps.span(first, last)
            out = self.out
            out.buf.append(line)
            out.chars += len(line)
            if len(out.buf) >= FLUSH_LINES or out.chars >= FLUSH_CHARS:
                out.write()
            return
        self._gap_records(records)
        if records and ndjson.maybe_large(batch, records) and ndjson.payload_bytes(records) > ndjson.STREAM_ABOVE:
            return self._stream(f, it)
        line = None
        if error is None:
            if self._c_line is not None:
                line = self._c_line(self._file_json, batch, records, self._c_encoding)
            if line is None:
                line = ndjson.py_batch_line(self._file_json, batch, records, self.view)
        else:
            line = jsonout.batch_line(self._file_json, batch, records, self.view, error.message)
        # Lines.add, inline: this runs once per batch
        out = self.out
        out.buf.append(line)
        out.chars += len(line)
        if len(out.buf) >= FLUSH_LINES or out.chars >= FLUSH_CHARS:
            out.write()

    def slice(self, f: LogFile, it: Item, first: bool) -> None:
        """Records of a batch streamed a slice at a time: its line is written as they come,
        straight to the stream (``Lines`` holds whole lines only)."""
        batch, records, _ = it
        self._gap_records(records)
        write = self.out.stream.write
        if first:
            self.out.write()
            write(ndjson.batch_prefix(self._file_json, batch) + ',"records":[')
            self._slices_open = False
        if not records:
            return
        if self._slices_open:
            write(",")
        self._slices_open = True
        text_ = None
        if self._c_line is not None and (type(records) is not LargeRecords
                                         or ndjson.payload_bytes(records) <= ndjson.STREAM_ABOVE):
            text_ = _accel.native().json_records(records, self._c_encoding)
        if text_ is not None:
            write(text_)
            return
        for i, r in enumerate(records):
            if i:
                write(",")
            for piece in ndjson.record_pieces(r, self.view):
                write(piece)

    def end_batch(self, f: LogFile, it: Item) -> None:
        """The end of a streamed batch's line, with the error that stopped its records."""
        tail = "]" if it.error is None else '],"records_error":' + ndjson.dumps(it.error.message)
        self.out.stream.write(tail + "}\n")

    def _stream(self, f: LogFile, it: Item) -> None:
        """A batch too large for one string: written in pieces, straight to the stream."""
        batch, records, error = it
        self.out.write()
        write = self.out.stream.write
        for piece in ndjson.batch_pieces(self._file_json, batch, records, self.view,
                                         None if error is None else error.message):
            write(piece)
        write("\n")

    def side(self, f: LogFile, rows: list[dict[str, Any]], lines: list[str]) -> None:
        for row in rows:
            self.out.add(ndjson.dumps({"object": "entry", "file": f.path, **row}))

    def end_file(self, f: LogFile, trailing: int) -> None:
        self._end_gaps()

    def finish(self) -> None:
        self.out.flush()


def summary_lines(blocks: list[tuple[int, list[str]]]) -> list[str]:
    """DumpLogSegments' closing report for stderr: each kind of block in turn (blocks
    gathered from several renderers, in file order, give the same lines as from one)."""
    return [line for _, block in sorted(blocks, key=lambda b: b[0]) for line in block]
