"""The original bytes of an Aiven ``.log`` object (zstd chunks, maybe AES-GCM encrypted), read
two ways (``kdump.storage.aiven_store`` names both for its views):

- ``ChunkMap``, for readers that ask for what they read (``need``): the dump's walk
  (``format.walk.Walker`` asks a ``need_span`` at a time) and every check of ``verify`` (its
  CRC walk, the scan, its resync, the index checks, a batch's records decoded again). The
  chunks are detransformed straight into anonymous memory as asked, a chunk's zstd frame
  read only as far as asked, and the chunks well behind the reader freed (``follow``), and
  detransformed again if asked for again. Nothing is written to disk, memory stays flat on a
  segment of any size, and each reader (a -j worker's range) detransforms only its own chunks;
- ``ChunkSpool``, for readers that take the object's bytes without asking (``info``'s
  summary, a -j split's header walk without an offset index): the chunks written once into a
  sparse local copy, made at the first ``need`` (its size alone, the manifest's, writes nothing).
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kdump.errors import InputError
from kdump.format import aiven_manifest as AM
from kdump.storage import fs, remote, views
from kdump.storage.aiven_keys import data_key, decrypt, load_manifest
from kdump.storage.mapped import SegmentMap
from kdump.storage.remote import is_remote
from kdump.storage.spool import Spool

# A ChunkMap's unit of asking and of decompressing a chunk in part: a walk asks this much ahead
# of itself, so a range's walk stopping just past a chunk's start (a -j cut: storage.split)
# decompresses little of it; a chunk the walk reads whole is decompressed in one call.
STEP = 256 << 10
PART = 64 << 10         # (a -j cut's check asks for one batch: a chunk's first PART bytes at a time)


class ChunkSource:
    """One chunked object's chunks, fetched and detransformed one at a time."""

    def __init__(self, path: str, view: views.View) -> None:
        self.path = path
        self.manifest = load_manifest(view.manifest)
        self.size = self.manifest.original_file_size
        self._key = data_key(self.manifest.encryption, view.keyring, path) if self.manifest.encryption else None
        self._read: Callable[[int, int], bytes] | None = None

    def fetch(self, c: AM.Chunk) -> bytes:
        """The chunk as stored, decrypted (still compressed when the segment is)."""
        position, size = c.transformed_position, c.transformed_size
        if is_remote(self.path):
            if self._read is None:
                store, p = remote.store_for(self.path)
                self._read = store.reader(self.path, p, fs.stat(self.path).size)    # the object's (stored) size
            data = self._read(position, size)
        else:
            with open(self.path, "rb") as f:
                f.seek(position)
                data = f.read(size)
        if len(data) != size:
            raise InputError(f"the object ends at byte {position + len(data)}, inside chunk at {position} of "
                             f"{size} bytes its manifest lists", file=self.path, position=position + len(data))
        if self._key is not None:
            assert self.manifest.encryption is not None
            data = decrypt(self._key, data, self.manifest.encryption.aad,
                            f"the chunk at byte {position}", self.path, position)
        return data

    def undecodable(self, c: AM.Chunk, e: Exception) -> InputError:
        return InputError(f"the chunk at byte {c.transformed_position} does not decompress: {e}",
                          file=self.path, position=c.transformed_position)

    def wrong_size(self, c: AM.Chunk, got: str) -> InputError:
        return InputError(f"the chunk at byte {c.transformed_position} holds {got} bytes, not the "
                          f"{c.original_size} its manifest lists", file=self.path, position=c.transformed_position)

    def original(self, c: AM.Chunk) -> bytes:
        """The chunk's original bytes, whole."""
        data = self.fetch(c)
        if self.manifest.compression:
            import zstandard

            try:
                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=c.original_size)
            except zstandard.ZstdError as e:
                raise self.undecodable(c, e) from None
        if len(data) != c.original_size:
            raise self.wrong_size(c, str(len(data)))
        return data


class ChunkMap(SegmentMap):
    """The segment's original bytes in an anonymous private mapping (a fork's copy is its own),
    filled a chunk, or the asked part of a chunk, at a time: ``need(start, end)`` before
    reading ``[start, end)``. Chunks more than ``FOLLOW_BEHIND`` behind the walk are freed and
    asked for again if read again."""

    need_span = STEP
    source: ChunkSource
    chunk_bytes: int
    _chunk: int
    _ready: list[int]
    _streams: dict[int, Any]
    _lock: threading.Lock
    _partial_from: int
    _ahead: dict[int, Future]
    _pool: ThreadPoolExecutor | None

    def __new__(cls, path: str, view: views.View) -> ChunkMap:
        source = ChunkSource(path, view)
        self = super().__new__(cls, -1, source.size, flags=mmap.MAP_PRIVATE)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:        # filled and freed a chunk at a time: 2 MiB pages fault far less often than 4 KiB ones
                self.madvise(mmap.MADV_HUGEPAGE)
            except OSError:
                pass
        self.path, self.big, self.source = path, True, source
        self._chunk = self.chunk_bytes = source.manifest.original_chunk_size
        self._ready = [0] * len(source.manifest.chunks)     # original bytes there, from each chunk's start
        self._streams = {}          # chunk -> its zstd frame, read so far
        self._lock = threading.Lock()
        self._partial_from = 0      # chunks ending past this are decompressed only as far as asked
        self._ahead = {}            # chunk -> its fill under way in the background
        self._pool = None
        return self

    def reading_to(self, stop: int | None) -> None:
        """The walk means to stop about ``stop`` (None: at the end): the chunks before the one
        holding it are decompressed whole at the first ask (one call: faster than in steps)."""
        self._partial_from = len(self) if stop is None else stop

    def data_from(self, position: int, end: int) -> int:
        return position         # (no holes: the path is the stored object's)

    def need(self, start: int, end: int) -> None:
        end = min(end, len(self))
        if start >= end:
            return
        size, ready, chunks = self._chunk, self._ready, self.source.manifest.chunks
        with self._lock:
            last = (end - 1) // size
            for i in range(start // size, last + 1):
                c = chunks[i]
                want = min(c.original_size, end - c.original_position)
                if ready[i] < want:
                    ahead = self._ahead.pop(i, None)
                    if ahead is not None:
                        ahead.result()      # (its error, if it failed, is this read's)
                    if ready[i] < want:
                        self._fill(i, c, want)
                    if c.original_position < self._dropped:     # a look back (verify's): freed again later
                        self._dropped = c.original_position // mmap.PAGESIZE * mmap.PAGESIZE
            # the next chunk, if the walk reads it whole, detransformed meanwhile (zstd, the
            # AES-GCM check and a remote store's GET let other threads run)
            nxt = last + 1
            if nxt < len(chunks) and not ready[nxt] and nxt not in self._ahead \
                    and chunks[nxt].original_position + chunks[nxt].original_size <= self._partial_from:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(1, thread_name_prefix="kdump-chunks")
                self._ahead[nxt] = self._pool.submit(self._fill, nxt, chunks[nxt], chunks[nxt].original_size)

    def _fill(self, i: int, c: AM.Chunk, want: int) -> None:
        if not self.source.manifest.compression:
            self._put(c.original_position, self.source.original(c))
            self._ready[i] = c.original_size
            return
        import zstandard

        stream = self._streams.get(i)
        if stream is None:
            stream = self._streams[i] = zstandard.ZstdDecompressor().stream_reader(self.source.fetch(c))
            self._ready[i] = 0
        # a step at least, and the rest of the chunk when a step would leave less than one
        whole = c.original_position + c.original_size <= self._partial_from or want + STEP >= c.original_size
        upto = c.original_size if whole else -(-want // PART) * PART
        done = self._ready[i]
        try:
            with memoryview(self) as view:
                while done < upto:
                    got = stream.readinto(view[c.original_position + done:c.original_position + upto])
                    if not got:
                        raise self.source.wrong_size(c, str(done))
                    done += got
                if done == c.original_size and stream.read(1):
                    raise self.source.wrong_size(c, "more than")
        except zstandard.ZstdError as e:
            raise self.source.undecodable(c, e) from None
        finally:
            self._ready[i] = done
        if done == c.original_size:
            del self._streams[i]

    def _put(self, position: int, data: bytes) -> None:
        self[position:position + len(data)] = data

    def _drop(self, cut: int) -> None:
        """Free the chunks before the one ``cut`` falls in (the mapping's own pages: nothing else
        keeps them; the chunk being read is never freed, however large the chunks are)."""
        size = self._chunk
        with self._lock:
            before = self._dropped
            super()._drop(cut // size * size // mmap.PAGESIZE * mmap.PAGESIZE)
            if self._dropped <= before:
                return
            for i in range(before // size, min(len(self._ready), -(-self._dropped // size))):
                self._ready[i] = 0
                self._streams.pop(i, None)

    def close(self) -> None:
        for ahead in self._ahead.values():     # (never unmapped under a fill)
            ahead.cancel() or ahead.exception()
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown()
        self._streams.clear()
        super().close()


class ChunkSpool:
    """The original bytes of a chunked ``.log`` object in a sparse local copy, chunk by chunk
    (made at the first ``need``: its size alone, from the manifest, writes nothing)."""

    def __init__(self, path: str, view: views.View) -> None:
        self.path = path
        self.source = ChunkSource(path, view)
        self.size = self.source.size
        self._copy: Spool | None = None
        self._done: set[int] = set()
        self._lock = threading.Lock()

    @property
    def fd(self) -> int:
        if self._copy is None:
            self._copy = Spool(self.path, self.size)        # the local file only: its fetches are ours
        return self._copy.fd

    def need(self, start: int, end: int) -> None:
        with self._lock:
            for c in self.source.manifest.chunks_for(start, min(end, self.size)):
                if c.original_position in self._done or not c.original_size:
                    continue
                view = memoryview(self.source.original(c))
                done, fd = 0, self.fd
                while done < len(view):
                    done += os.pwrite(fd, view[done:], c.original_position + done)
                self._done.add(c.original_position)

    def read(self, start: int, length: int) -> bytes:
        self.need(start, start + length)
        return os.pread(self.fd, length, start) if length > 0 else b""

    def close(self) -> None:
        if self._copy is not None:
            self._copy.close()
