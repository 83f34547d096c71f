"""``kdump records``' run: every record of PATHS in offset order, partition after partition,
filtered by key, value and header, as a consumer would see them (``--isolation``)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kdump import findings as F
from kdump.errors import ExitStatus, KdumpError, UsageError
from kdump.export.ndjson import dumps
from kdump.format.codecs import DEFAULT_LIMITS, Limits
from kdump.jobs.ordered_output import keep_freed_memory
from kdump.model import Record
from kdump.render import records as flat
from kdump.render.diagnostics import report_error
from kdump.render.escape import printable
from kdump.render.records import Line, batch_parts, damage_object, record_object, record_objects
from kdump.state.txn_status import Outcomes
from kdump.storage.levels import resolve
from kdump.storage.logdir import LOG, directory_groups
from kdump.storage.record_reader import RAW_ALL, Filters, Item, Raw, RecordSlices, SegmentReader, Span

READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"


@dataclass
class RecordMatch:
    """The key, value and header tests a record must all pass. Text is matched as its UTF-8
    bytes, a regex on the raw bytes (so ``\\x00`` matches a zero byte), hex as the bytes."""

    tests: list[Callable[[Record], bool]] = field(default_factory=list)

    @classmethod
    def build(cls, key: str | None = None, key_regex: str | None = None, key_hex: str | None = None,
              value: str | None = None, value_regex: str | None = None, value_hex: str | None = None,
              headers: Iterable[str] = (), header_regexes: Iterable[str] = ()) -> RecordMatch:
        m = cls()
        for side, exact, regex, hexa in (("key", key, key_regex, key_hex), ("value", value, value_regex, value_hex)):
            get = (lambda r: r.key) if side == "key" else (lambda r: r.value)
            if exact is not None:
                want = exact.encode("utf-8")
                m.tests.append(lambda r, g=get, w=want: g(r) == w)
            if hexa is not None:
                want = _hex(hexa, f"--{side}-hex")
                m.tests.append(lambda r, g=get, w=want: g(r) == w)
            if regex is not None:
                pat = _regex(regex, f"--{side}-regex")
                m.tests.append(lambda r, g=get, p=pat: (d := g(r)) is not None and p.search(d) is not None)
        for h in headers:
            name, sep, val = h.partition("=")
            k, v = name.encode("utf-8"), val.encode("utf-8")
            if sep:
                m.tests.append(lambda r, k=k, v=v: any(hk == k and hv == v for hk, hv in r.headers))
            else:
                m.tests.append(lambda r, k=k: any(hk == k for hk, _ in r.headers))
        for h in header_regexes:
            name, sep, val = h.partition("=")
            if not sep:
                raise UsageError(f"--header-regex {h!r}: give KEY=REGEX")
            k, pat = name.encode("utf-8"), _regex(val, "--header-regex")
            m.tests.append(lambda r, k=k, p=pat: any(hk == k and hv is not None and p.search(hv) is not None
                                                     for hk, hv in r.headers))
        return m

    def __call__(self, r: Record) -> bool:
        return all(t(r) for t in self.tests)


_item = tuple.__new__       # Item(...) without the named tuple's Python-level __new__


def _hex(text: str, option: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"{option} {text!r} is not hex") from None


def _regex(text: str, option: str) -> re.Pattern[bytes]:
    try:
        return re.compile(text.encode("utf-8"), re.S)
    except re.error as e:
        raise UsageError(f"{option} {text!r}: {e}") from None


@dataclass
class Stream:
    """What the run draws: ``draw(Line) -> str`` for a record, or JSON objects (by the C writer
    where it can: ``c``, its encoding code, None: Python alone)."""

    out: object
    json: bool
    draw: Callable[[Line], str] | None
    view: object
    limit: int | None = None
    written: int = 0
    c: int | None = None

    def __post_init__(self) -> None:
        if self.json:
            self.c = flat.c_encoding(self.view)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.written >= self.limit

    @property
    def left(self) -> int:
        """Records still to write (-1: no --limit)."""
        return -1 if self.limit is None else self.limit - self.written

    def text(self, text: str, count: int) -> None:
        """Records the C writer wrote."""
        self.out.stream.write(text)  # type: ignore[attr-defined]
        self.written += count

    def record(self, line: Line) -> bool:
        """Write one record; False once --limit is reached."""
        text = record_object(line, self.view) if self.json else self.draw(line)  # type: ignore[misc]
        self.out.stream.write(text)  # type: ignore[attr-defined]
        self.written += 1
        return self.limit is None or self.written < self.limit

    def batch(self, topic, partition, file: str, b, records: list[Record], txn: str | None) -> bool:
        """Write every record of a batch chunk at once (no filter, no --tail); False once --limit
        is reached."""
        if self.json:
            head, tail = batch_parts(topic, partition, file, b, txn)
            done = flat.c_record_objects(head, tail, records, self.c, self.left) if self.c is not None else None
            if done is not None:
                self.text(*done)
                return not self.full
        if self.limit is not None and self.written + len(records) >= self.limit:
            records = records[:self.limit - self.written]
        if self.json:
            self.out.stream.write(record_objects(head, tail, records, self.view))  # type: ignore[attr-defined]
        else:
            draw = self.draw
            self.out.stream.write("".join([draw(Line(topic, partition, file, b, r, txn))  # type: ignore[misc]
                                           for r in records]))
        self.written += len(records)
        return self.limit is None or self.written < self.limit

    def damage(self, kind: str, file: str, position: int | None, offset: int | None, message: str) -> None:
        if self.json:
            self.out.stream.write(damage_object(kind, F.class_of(kind), file, position, offset, message) + "\n")  # type: ignore[attr-defined]  # noqa: E501


def run_records(paths, stream: Stream, *, filters: Filters = Filters(), match: RecordMatch = RecordMatch(),
                tail: int | None = None, isolation: str = READ_UNCOMMITTED, limits: Limits = DEFAULT_LIMITS) -> int:
    unlisted: list[KdumpError] = []
    files = resolve(paths, kinds=(LOG,), errors=unlisted, left_out=[])
    keep_freed_memory()     # the C writer makes and frees ~64 KB pieces: keep the memory (brk was 1/3 of the CPU)
    status = ExitStatus.OK
    for e in unlisted:
        report_error(e)
        status = max(status, e.exit_code)
    if stream.limit == 0:
        return int(status)
    for _directory, group in directory_groups(files):
        segments = [f for f in group if f.kind == LOG and f.leftover is None]
        if not segments:
            continue
        status = max(status, _partition(segments, stream, filters, match, tail, isolation, limits))
        if stream.limit is not None and stream.written >= stream.limit:
            break
    return int(status)


def _partition(segments, stream: Stream, filters: Filters, match: RecordMatch, tail: int | None, isolation: str,
               limits: Limits) -> int:
    outcomes = Outcomes.of_segments(segments)
    committed_only = isolation == READ_COMMITTED
    kept: deque[Line] | None = deque(maxlen=tail) if tail is not None else None
    status = ExitStatus.OK
    fast = stream.c is not None and kept is None and not match.tests
    for f in segments:
        if stream.full:
            return status
        raw, run = _c_writers(stream, f, outcomes, committed_only) if fast else (None, None)
        spans = run is not None
        reader = SegmentReader(f, filters, records=True, limits=limits, raw=None if raw is None else RAW_ALL,
                               spans=spans)
        for it in reader:
            if stream.full:         # (the C run took the batch where --limit was reached)
                return status
            if spans and type(it) is Span:      # plain v2 batches from here: the C writer writes what it can
                reader.resume(run(*it))
                continue
            if type(it.records) is Raw:         # a batch's records section: the C writer's, if it can
                written = raw(it.batch, *it.records)
                it = reader.decoded(it.batch) if written is None else _item(Item, (it.batch, written, None))
            b = it.batch
            if not b.crc_valid:
                status = ExitStatus.DAMAGE
                _damage(stream, F.CRC_MISMATCH, f.path, b.position, b.base_offset,
                        f"batch at offset {b.base_offset} has an invalid CRC (stored {b.crc})")
            if b.is_control:
                continue
            if committed_only and not outcomes.read_committed(b):
                continue
            txn = outcomes.status(b)
            records = it.records
            if type(records) is tuple:      # written by the C writer of a Raw: (text, count)
                stream.text(*records)
                if stream.full:
                    return status
                continue
            slices = records if type(records) is RecordSlices else (records or (),)
            for chunk in slices:
                if kept is None and not match.tests:
                    if chunk and not stream.batch(f.topic, f.partition, f.path, b, chunk, txn):
                        return status
                    continue
                for r in chunk:
                    if match.tests and not match(r):
                        continue
                    line = Line(f.topic, f.partition, f.path, b, r, txn)
                    if kept is not None:
                        kept.append(line)
                    elif not stream.record(line):
                        return status
            error = records.error if type(records) is RecordSlices else it.error
            if error is not None:
                status = max(status, ExitStatus.DAMAGE)
                _damage(stream, F.kind_of_error(error), f.path, b.position, b.base_offset, error.message)
        if stream.full:
            return status
        if reader.stop is not None:
            s = reader.stop
            status = max(status, ExitStatus.DAMAGE if F.is_damage(s.kind) else ExitStatus.OK)
            _damage(stream, s.kind, f.path, s.position, s.offset, s.message)
    for line in kept or ():
        if not stream.record(line):
            break
    return status


def _c_writers(stream: Stream, f, outcomes: Outcomes, committed_only: bool) -> tuple:
    """(raw, run): the C writers of the reader's Raw records sections (storage/record_reader.py),
    the flat objects of a batch from its bytes; and of its Spans, those of a run of plain v2
    batches straight from the segment (None: not here); both with what the Python loop would
    write for them (txn, --isolation, --limit)."""
    head, file_json, encoding = flat.record_head(f.topic, f.partition), dumps(f.path), stream.c

    def raw(b, data, log_append_ts=None):
        if committed_only and not outcomes.read_committed(b):
            return ("", 0)          # the loop leaves it out, undecoded
        _, tail = batch_parts(f.topic, f.partition, f.path, b, outcomes.status(b))
        return flat.c_raw_objects(head, tail, b, data, log_append_ts, encoding, stream.left)  # type: ignore[arg-type]
    markers = outcomes.table()
    if markers is not None and head.isascii() and file_json.isascii():
        lso = outcomes.last_stable_offset

        def run(buf, pos, end, max_records):
            if stream.full:
                return pos
            text, pos, count = flat.c_run_objects(head, file_json, buf, pos, end, max_records, encoding,  # type: ignore[arg-type]
                                             stream.left, markers, lso, committed_only)
            if text is not None:
                stream.text(text, count)
            return pos
        return raw, run
    return raw, None


def _damage(stream: Stream, kind: str, file: str, position: int | None, offset: int | None, message: str) -> None:
    """In the JSON stream as an object; on stderr as one line always."""
    stream.damage(kind, file, position, offset, message)
    where = f"{file}:{position}: " if position is not None else f"{file}: "
    report_error(KdumpError(printable(where + f"{kind}: {message}")), hint=False)
