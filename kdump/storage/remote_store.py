"""Remote segment stores (KIP-405 tiered storage): one reader interface, a layout per plugin.

A RemoteStorageManager keeps each offloaded segment as a set of objects: the ``.log`` and its
offset, time and transaction indexes, the producer snapshot and the leader-epoch checkpoint.
A layout says where those objects are for a (topic id, partition, segment id); kdump only
lists and reads them: nothing here ever writes to remote storage.

Layouts: ``kafka-local``, Kafka's own ``LocalTieredStorage`` (kafka-storage's test jar, the
RSM of Kafka's tiered-storage integration tests); ``aiven``, Aiven's
tiered-storage-for-apache-kafka (``kdump.storage.aiven_store``).
"""

from __future__ import annotations

import os
import re
from typing import Protocol

from kdump.errors import InputError, UsageError
from kdump.storage import fs, remote
from kdump.storage.remote import is_remote
from kdump.storage.remote_objects import RemoteFiles, RemoteObject, entry_size
from kdump.storage.views import View

__all__ = ["RemoteFiles", "RemoteObject", "RemoteStore", "open_store", "LocalTieredStorage", "LAYOUTS"]

# The object kinds of one remote segment, by LocalTieredStorage's file suffix
# (RemoteLogSegmentFileset.RemoteLogSegmentFileType).
SEGMENT, OFFSET_INDEX, TIME_INDEX = ".log", ".index", ".timeindex"
TRANSACTION_INDEX, LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT = ".txnindex", ".leader_epoch_checkpoint", ".snapshot"
SUFFIXES = (SEGMENT, OFFSET_INDEX, TIME_INDEX, TRANSACTION_INDEX, LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT)
# Every segment has these; the transaction index only when it is not empty (txnIndexEmpty).
REQUIRED = (SEGMENT, OFFSET_INDEX, TIME_INDEX, LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT)

LAYOUTS = ("kafka-local", "aiven")
# each side file's suffix -> the name a partition dir has for it
_LOCAL_NAMES = {OFFSET_INDEX: OFFSET_INDEX, TIME_INDEX: TIME_INDEX, TRANSACTION_INDEX: TRANSACTION_INDEX,
                PRODUCER_SNAPSHOT: PRODUCER_SNAPSHOT, LEADER_EPOCH_CHECKPOINT: "leader-epoch-checkpoint"}


class RemoteStore(Protocol):
    root: str

    def required(self, txn_index_empty: bool) -> tuple[str, ...]:
        """The object suffixes every live segment has."""

    def segment_log(self, files: RemoteFiles) -> RemoteObject | None:
        """The segment's records as a readable file: its path and the segment's size."""

    def moved(self, meta) -> RemoteFiles | None:
        """Where a segment is whose custom metadata (a RemoteSegmentMeta's ``custom``) names
        another place (None: not moved)."""

    def partition_dir(self, topic: str, topic_id: str, partition: int) -> str:
        """Where the partition's objects are (a directory or a key prefix)."""

    def segments(self, topic: str, topic_id: str, partition: int) -> dict[str, RemoteFiles]:
        """Every segment the store holds for this partition, by segment id."""

    def stray_objects(self, topic: str, topic_id: str, partition: int) -> list[str]:
        """Objects in the partition's place whose names no segment of this layout has."""

    def partitions(self) -> list[tuple[str, int, str]]:
        """(topic, partition, topic id) of every partition the store holds objects for."""

    def side_files(self, files: RemoteFiles) -> dict[str, tuple[str, View]]:
        """The segment's side files: the name of the file a partition dir has for each
        (``.index``, ``leader-epoch-checkpoint`` ...) -> (where it is, a view of its bytes)."""


def open_store(path: str, layout: str, keyring: str | None = None) -> RemoteStore:
    if layout == "aiven":
        from kdump.storage.aiven_store import AivenStore

        return AivenStore(path, keyring)
    if layout != "kafka-local":
        raise UsageError(f"--remote-layout {layout}: not a known layout (known: {', '.join(LAYOUTS)})")
    return LocalTieredStorage(path)


# <20-digit start offset>-<segment id><suffix>, as RemoteLogSegmentFileset names them
_NAME = re.compile(r"^(\d+)-([A-Za-z0-9_-]{22})(\.[a-z_]+)$")
STORAGE_DIR = "kafka-tiered-storage"


class LocalTieredStorage:
    """``rsm.config.dir``/kafka-tiered-storage/<topic>-<partition>-<topic id>/<offset>-<id><suffix>.

    ``path`` is the directory the broker was configured with or its kafka-tiered-storage
    folder itself: a local directory, or the same tree under an s3:// prefix or an hdfs://
    path (read through ``kdump.storage.fs``, as log dirs there are)."""

    def __init__(self, path: str) -> None:
        if fs.kind(path) != "dir":
            raise InputError("cannot read the remote store: not a directory", file=path)
        below = _join(path, STORAGE_DIR)
        self.root = below if fs.isdir(below) else fs.normpath(path)
        try:
            self._dirs = sorted(e.name for e in fs.scandir(self.root) if e.is_dir())
        except OSError as e:
            raise InputError(f"cannot list the remote store: {e.strerror}", file=path) from None

    def partition_dir(self, topic: str, topic_id: str, partition: int) -> str:
        return _join(self.root, f"{topic}-{partition}-{topic_id}")

    def required(self, txn_index_empty: bool) -> tuple[str, ...]:
        return REQUIRED + (() if txn_index_empty else (TRANSACTION_INDEX,))

    def segment_log(self, files: RemoteFiles) -> RemoteObject | None:
        return files.objects.get(SEGMENT)

    def moved(self, meta) -> RemoteFiles | None:
        return None

    def _entries(self, topic: str, topic_id: str, partition: int) -> list:
        d = self.partition_dir(topic, topic_id, partition)
        if d.rpartition("/")[2] not in self._dirs:      # a folder the store does not hold: nothing listed
            return []
        try:
            return sorted(fs.scandir(d), key=lambda e: e.name)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise InputError(f"cannot list: {e.strerror}", file=d) from None

    def segments(self, topic: str, topic_id: str, partition: int) -> dict[str, RemoteFiles]:
        found: dict[str, RemoteFiles] = {}
        for e in self._entries(topic, topic_id, partition):
            m = _NAME.match(e.name)
            if not m or m.group(3) not in SUFFIXES or not e.is_file():
                continue
            seg = found.setdefault(m.group(2), RemoteFiles(m.group(2), int(m.group(1)), {}))
            seg.objects[m.group(3)] = RemoteObject(e.path, entry_size(e))
        return found

    def stray_objects(self, topic: str, topic_id: str, partition: int) -> list[str]:
        return [e.path for e in self._entries(topic, topic_id, partition)
                if not (_NAME.match(e.name) and _NAME.match(e.name).group(3) in SUFFIXES)]  # type: ignore[union-attr]

    def side_files(self, files: RemoteFiles) -> dict[str, tuple[str, View]]:
        return {_LOCAL_NAMES[suffix]: (obj.path, View("alias", "", None, obj.path))
                for suffix, obj in files.objects.items() if suffix in _LOCAL_NAMES}

    def partitions(self) -> list[tuple[str, int, str]]:
        """(topic, partition, topic id) of every partition folder in the store."""
        out = []
        for name in self._dirs:
            rest, topic_id = name[:-23], name[-22:]      # a topic id may hold '-' itself
            topic, _, number = rest.rpartition("-")
            if name[-23:-22] == "-" and topic and number.isdecimal():
                out.append((topic, int(number), topic_id))
        return out


def _join(directory: str, name: str) -> str:
    return remote.join(fs.normpath(directory), name) if is_remote(directory) else os.path.join(directory, name)

