"""What Kafka 4.3.1 reads of a partition it loads after a clean shutdown (``.kafka_cleanshutdown``).

``LogLoader.recoverLog`` recovers no segment then: the log end offset is the active segment's
``LogSegment.readNextOffset()``, read through its ``.index`` as it is (a pre-existing index is
trusted whole: ``AbstractIndex`` takes every whole slot of the file as an entry, zeros and
garbage included) and a walk of entry headers that checks no CRC (``FileLogInputStream.nextBatch``).
That walk throws ``CorruptRecordException`` on a size below 14, and the load fails: the broker
does not load the partition. After the load the active segment's indexes are resized to
``segment.index.bytes`` and trimmed to their whole entries at close (``AbstractIndex.resize``,
``trimToValidSize``).

Each function names the Kafka method it follows; ``tests/kafka/test_clean_parity.py`` checks
them against Kafka's own ``UnifiedLog`` on damaged copies of broker-written partitions.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from kdump.format.batch import HEADER_SIZE_UP_TO_MAGIC, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from kdump.format.legacy import RECORD_OVERHEAD_V0
from kdump.format.logdir_files import CLEAN_SHUTDOWN_FILE
from kdump.storage import fs

OFFSET_ENTRY = struct.Struct(">ii")          # OffsetIndex: relative offset, position (both signed ints)
OFFSET_ENTRY_SIZE = OFFSET_ENTRY.size
TIME_ENTRY_SIZE = 12                         # TimeIndex: timestamp int64, relative offset int32
WARM_ENTRIES = 8192 // OFFSET_ENTRY_SIZE     # AbstractIndex.warmEntries()
_HEAD = struct.Struct(">qiib")              # offset, size, (epoch | crc), magic
_DELTA = struct.Struct(">i")


class LoadFailure(Exception):
    """The exception Kafka's load throws: its class name and message, as the broker logs them."""

    def __init__(self, exception: str, message: str, position: int) -> None:
        super().__init__(f"{exception.rsplit('.', 1)[-1]}: {message}")
        self.exception, self.message, self.position = exception, message, position


class OffsetIndexView:
    """An ``OffsetIndex`` opened on a pre-existing file: ``entries`` = whole slots of the file.
    ``data``: its bytes, or anything sliced like them (``SliceReader``): a lookup reads the few
    slots its search visits, never the file."""

    def __init__(self, data, base_offset: int) -> None:
        self.data, self.base = data, base_offset
        self.entries = len(data) // OFFSET_ENTRY_SIZE

    def entry(self, n: int) -> tuple[int, int]:
        """``OffsetIndex.parseEntry``: (absolute offset, position)."""
        at = n * OFFSET_ENTRY_SIZE
        rel, pos = OFFSET_ENTRY.unpack(self.data[at:at + OFFSET_ENTRY_SIZE])
        return self.base + rel, pos

    def last_offset(self) -> int:
        """``OffsetIndex.lastEntry().offset()``: the last slot's, or the base when there is none."""
        return self.entry(self.entries - 1)[0] if self.entries else self.base

    def lookup(self, target: int) -> tuple[int, int]:
        """``OffsetIndex.lookup``: the largest entry at or below ``target`` (the warm section
        first), or (base, 0). Over a garbage index the search lands where Kafka's does."""
        slot = self._largest_lower_bound(target)
        return (self.base, 0) if slot == -1 else self.entry(slot)

    def _largest_lower_bound(self, target: int) -> int:
        """``AbstractIndex.indexSlotRangeFor`` with LARGEST_LOWER_BOUND on the key."""
        n = self.entries
        if n == 0:
            return -1
        first_hot = max(0, n - 1 - WARM_ENTRIES)
        if self.entry(first_hot)[0] < target:
            return self._binary_search(target, first_hot, n - 1)
        if self.entry(0)[0] > target:
            return -1
        return self._binary_search(target, 0, first_hot)

    def _binary_search(self, target: int, lo: int, hi: int) -> int:
        """``AbstractIndex.binarySearch``."""
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = self.entry(mid)[0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo


class _FileBatch(NamedTuple):
    position: int
    offset: int          # the entry's header offset
    size: int            # LOG_OVERHEAD + size
    magic: int


def _batches_from(buf, start: int, file_name: str):
    """``FileRecords.batchesFrom``: ``FileLogInputStream.nextBatch`` from ``start``, no CRC checked."""
    end = len(buf)
    pos = start
    while True:
        if pos >= end - HEADER_SIZE_UP_TO_MAGIC:
            return
        offset, size, _, magic = _HEAD.unpack_from(buf, pos)
        if size < RECORD_OVERHEAD_V0:
            raise LoadFailure("org.apache.kafka.common.errors.CorruptRecordException",
                              f"Found record size {size} smaller than minimum record overhead "
                              f"({RECORD_OVERHEAD_V0}) in file {file_name}.", pos)
        if pos > end - LOG_OVERHEAD - size:
            return
        yield _FileBatch(pos, offset, LOG_OVERHEAD + size, magic)
        pos += LOG_OVERHEAD + size


def _last_offset(buf, b: _FileBatch, file_name: str) -> int:
    """``FileChannelRecordBatch.lastOffset``: a v2 header's base + lastOffsetDelta (the 61-byte
    header read from the file, which fails at its end), a legacy entry's own offset."""
    if b.magic < 2:
        return b.offset
    if b.position + RECORD_BATCH_OVERHEAD > len(buf):
        raise LoadFailure("org.apache.kafka.common.KafkaException",
                          f"Failed to load record batch at position {b.position} from {file_name}", b.position)
    return b.offset + _DELTA.unpack_from(buf, b.position + LAST_OFFSET_DELTA_OFFSET)[0]


def _base_offset(buf, b: _FileBatch) -> int:
    """``FileChannelRecordBatch.baseOffset``: the header's for v2; a legacy wrapper's first inner
    offset (kdump's decoder gives it; an uncompressed message's is its own)."""
    if b.magic >= 2:
        return b.offset
    from kdump.format.walk import Walker

    w = next(iter(Walker(buf, b.position, b.position + b.size)), None)
    return w.base_offset if w is not None and w.base_offset is not None else b.offset


def search_for_offset_from_position(buf, target: int, start: int, file_name: str) -> int | None:
    """``FileRecords.searchForOffsetFromPosition``: the position of the batch holding ``target``
    (or the first past it), walking from ``start``; None when no batch qualifies."""
    prev: _FileBatch | None = None
    for b in _batches_from(buf, start, file_name):
        base = _base_offset(buf, b)
        if base == target:
            return b.position
        if base > target:
            if prev is not None and _last_offset(buf, prev, file_name) >= target:
                return prev.position
            return b.position
        prev = b
    if prev is not None and _last_offset(buf, prev, file_name) >= target:
        return prev.position
    return None


def read_next_offset(buf, index, base_offset: int, file_name: str) -> int:
    """``LogSegment.readNextOffset``: ``read(offsetIndex.lastOffset, size)``, then the last batch's
    next offset; the base offset when the read finds nothing (a torn batch at the last index
    entry, an index pointing past the data). Raises LoadFailure where Kafka throws."""
    idx = OffsetIndexView(index, base_offset)
    target = idx.last_offset()
    position = max(idx.lookup(target)[1], 0)        # LogSegment.translateOffset
    found = search_for_offset_from_position(buf, target, position, file_name)
    if found is None:
        return base_offset
    last = None
    for b in _batches_from(buf, found, file_name):   # AbstractRecords.lastBatch over the slice
        last = b
    if last is None:
        return base_offset
    return _last_offset(buf, last, file_name) + 1


def trim_to_valid_size(length: int, entry_size: int) -> int:
    """``AbstractIndex.trimToValidSize`` after ``resize``: the whole entries of a file of
    ``length`` bytes (the active segment's indexes at load and close)."""
    return entry_size * (length // entry_size)


class CleanVerdict(NamedTuple):
    """What a broker's load makes of a partition after a clean shutdown."""

    log_end_offset: int | None
    failure: LoadFailure | None


def clean_verdict(directory: str, shut_down: dict[str, bool] | None = None) -> CleanVerdict | None:
    """The clean-shutdown load of the partition in ``directory``: None when its log dir holds no
    ``.kafka_cleanshutdown`` or its active segment is recovered at load (no ``.index``).
    ``shut_down``: log dir -> whether it holds one, for a caller asking of many partitions at once."""
    if fs.is_remote(directory):
        return None         # read where the broker runs: a local log dir
    logdir = os.path.dirname(fs.normpath(directory))
    marked = None if shut_down is None else shut_down.get(logdir)
    if marked is None:
        marked = os.path.isfile(os.path.join(logdir, CLEAN_SHUTDOWN_FILE))
        if shut_down is not None:
            shut_down[logdir] = marked
    if not marked:
        return None         # (verify asks of every partition: the usual answer in one stat a log dir)
    from kdump.check.side_file_views import SIDE_FILE_LIMIT
    from kdump.errors import KdumpError
    from kdump.storage import logdir as K
    from kdump.storage.mapped import MappedFile
    from kdump.storage.names import INDEX_SUFFIX, offset_name
    from kdump.storage.slice_reader import SliceReader

    try:
        logs = sorted((f.base_offset, f.path) for f in K.partition_files(directory)
                      if f.kind == K.LOG and f.leftover is None and f.base_offset is not None)
    except KdumpError:
        return None
    if not logs:
        return None
    base, path = logs[-1]
    index = os.path.join(directory, offset_name(base, INDEX_SUFFIX))
    if not fs.isfile(index):
        return None
    try:
        with MappedFile(path) as m, SliceReader(index, SIDE_FILE_LIMIT) as idx:
            return CleanVerdict(read_next_offset(m.buf, idx.data(), base, path), None)
    except LoadFailure as e:
        return CleanVerdict(None, e)
    except (KdumpError, OSError):
        return None


def kept_after_clean_shutdown(log_path: str, base_offset: int) -> bool:
    """Does the broker's load keep this segment as it is? After a clean shutdown it recovers
    only the segments without ``.index`` (``LogLoader.loadSegmentFiles``)."""
    from kdump.format.logdir_files import CLEAN_SHUTDOWN_FILE
    from kdump.storage import fs
    from kdump.storage.names import INDEX_SUFFIX, offset_name

    if fs.is_remote(log_path):
        return False
    directory = os.path.dirname(os.path.abspath(log_path))
    return (fs.isfile(os.path.join(os.path.dirname(directory), CLEAN_SHUTDOWN_FILE))
            and fs.isfile(os.path.join(directory, offset_name(base_offset, INDEX_SUFFIX))))
