"""``--remote-layout aiven``: Aiven's tiered-storage-for-apache-kafka objects, read only.

Keys: ``<prefix><topic>-<topic id>/<partition>/<20-digit start offset>-<segment id>.<suffix>``
with the suffixes ``log``, ``indexes`` and ``rsm-manifest`` (``kdump.format.aiven_manifest``
says what is in them). ``--remote-storage`` is the bucket URL with the plugin's
``key.prefix`` (or a directory holding the same tree, its filesystem backend's). A
segment's custom metadata may name another prefix or key: ``segments`` takes ``keys``.

A ``.log`` object is read as the segment it holds, a chunk at a time
(``kdump.storage.aiven_chunks``: into memory as its readers ask, for the dump and verify; into
a sparse local copy for a reader that takes the bytes without asking). Its ``.indexes``
object's offset index is the one beside it (a seek's, a -j split's: ``views.beside``). Its
other pieces are held in memory (``remote_parts.BytesSpool``). An encrypted one needs the key ring
(``--remote-keyring FILE``): lines ``<key id>=<private key PEM file>``, or the plugin's own
``[rsm.config.]encryption.key.pairs.<id>.private.key.file=<file>``.
"""

from __future__ import annotations

import os
import re

from kdump.errors import InputError
from kdump.storage import fs, remote, views
from kdump.storage.aiven_chunks import ChunkMap, ChunkSpool
from kdump.storage.aiven_keys import data_key, decrypt, load_manifest
from kdump.storage.remote import is_remote
from kdump.storage.remote_objects import RemoteFiles, RemoteObject, entry_size
from kdump.storage.remote_parts import BytesSpool, read_range

SEGMENT, INDEXES, MANIFEST = ".log", ".indexes", ".rsm-manifest"
SUFFIXES = (SEGMENT, INDEXES, MANIFEST)
# the manifest's name of each piece of the .indexes object -> the file a partition dir has for it
SIDE_FILES = {"offset": ".index", "timestamp": ".timeindex", "producerSnapshot": ".snapshot",
              "leaderEpoch": "leader-epoch-checkpoint", "transaction": ".txnindex"}
_NAME = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})(\.log|\.indexes|\.rsm-manifest)$")
_DIR = re.compile(r"^(.+)-([A-Za-z0-9_-]{22})$")


def _join(directory: str, name: str) -> str:
    return remote.join(directory, name) if is_remote(directory) else os.path.join(directory, name)


class AivenStore:
    required_suffixes = SUFFIXES

    def __init__(self, path: str, keyring: str | None = None) -> None:
        if fs.kind(path) != "dir":
            raise InputError("cannot read the remote store: not a directory", file=path)
        self.root = fs.normpath(path)
        self.keyring = keyring
        self._listed: dict[str, list] = {}

    def required(self, txn_index_empty: bool) -> tuple[str, ...]:
        return SUFFIXES

    def partition_dir(self, topic: str, topic_id: str, partition: int) -> str:
        return _join(_join(self.root, f"{topic}-{topic_id}"), str(partition))

    def _entries(self, d: str) -> list:
        if d not in self._listed:
            try:
                self._listed[d] = sorted(fs.scandir(d), key=lambda e: e.name) if fs.isdir(d) else []
            except OSError as e:
                raise InputError(f"cannot list: {e.strerror}", file=d) from None
        return self._listed[d]

    def segments(self, topic: str, topic_id: str, partition: int) -> dict[str, RemoteFiles]:
        found: dict[str, RemoteFiles] = {}
        for e in self._entries(self.partition_dir(topic, topic_id, partition)):
            m = _NAME.match(e.name)
            if m and e.is_file():
                seg = found.setdefault(m.group(2), RemoteFiles(m.group(2), int(m.group(1)), {}))
                seg.objects[m.group(3)] = RemoteObject(e.path, entry_size(e))
        return found

    def moved(self, meta) -> RemoteFiles | None:
        """A segment whose custom metadata (``meta.custom``: tag 1 the prefix, 2 the key
        without its suffix) names another place than the layout's own."""
        prefix, main = meta.custom.get(1), meta.custom.get(2)
        if prefix is None and main is None:
            return None
        base = self.root if prefix is None else _bucket(self.root) + "/" + str(prefix).lstrip("/")
        if main is None:
            main = (f"{meta.topic}-{meta.topic_id}/{meta.partition}/"
                    f"{meta.start_offset:020d}-{meta.segment_id}")
        found = RemoteFiles(meta.segment_id, meta.start_offset, {})
        for suffix in SUFFIXES:
            path = base + str(main) + suffix if base.endswith("/") else _join(base, str(main) + suffix)
            st = fs.stat(path) if is_remote(path) else None
            if st is not None and st.kind == "file":
                found.objects[suffix] = RemoteObject(path, st.size)
            elif st is None and os.path.isfile(path):
                found.objects[suffix] = RemoteObject(path, os.path.getsize(path))
        return found

    def stray_objects(self, topic: str, topic_id: str, partition: int) -> list[str]:
        return [e.path for e in self._entries(self.partition_dir(topic, topic_id, partition))
                if not _NAME.match(e.name)]

    def partitions(self) -> list[tuple[str, int, str]]:
        out = []
        for e in self._entries(self.root):
            m = _DIR.match(e.name)
            if m and e.is_dir():
                out += [(m.group(1), int(p.name), m.group(2)) for p in self._entries(e.path)
                        if p.is_dir() and p.name.isdecimal()]
        return out

    def segment_log(self, files: RemoteFiles) -> RemoteObject | None:
        """The segment's ``.log`` registered as a view of its chunks, with the segment's size
        (None without a manifest). A manifest that cannot be read, or whose chunks add up to
        more than the object holds, is an InputError naming it."""
        log, manifest = files.objects.get(SEGMENT), files.objects.get(MANIFEST)
        if log is None or manifest is None:
            return None
        m = load_manifest(manifest.path)
        if log.size < m.transformed_size:
            raise InputError(f"{log.size} bytes of the {m.transformed_size} its manifest's chunks take",
                             file=log.path, position=log.size)
        views.register(log.path, views.View("aiven", manifest.path, self.keyring))
        return RemoteObject(log.path, m.original_file_size)


    def side_files(self, files: RemoteFiles) -> dict[str, tuple[str, views.View]]:
        """The pieces of the segment's ``.indexes`` object its manifest places: the name of the
        file a partition dir has for each -> (``<indexes object>[<piece>]``, its view)."""
        indexes, manifest = files.objects.get(INDEXES), files.objects.get(MANIFEST)
        if indexes is None or manifest is None:
            return {}
        m = load_manifest(manifest.path)
        return {SIDE_FILES[name]: (f"{indexes.path}[{name}]",
                                   views.View("aiven-index", manifest.path, self.keyring, indexes.path, pos, size))
                for name, (pos, size) in m.indexes.items()}


def _bucket(root: str) -> str:
    """Where an overriding prefix starts: the bucket of a URL, a directory store's directory."""
    if is_remote(root):
        scheme, _, rest = root.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"
    return root



class IndexPiece(BytesSpool):
    """One index of a segment's ``.indexes`` object: ``view.size`` bytes from ``view.position``
    (each piece encrypted alone when the segment is, never compressed), decrypted."""

    def __init__(self, path: str, view: views.View) -> None:
        target = view.target or ""
        data = read_range(target, view.position, view.size)
        if len(data) != view.size:
            raise InputError(f"the object ends at byte {view.position + len(data)}, inside the piece its manifest "
                             f"places at {view.position} ({view.size} bytes)", file=target,
                             position=view.position + len(data))
        m = load_manifest(view.manifest)
        if m.encryption is not None and data:
            data = decrypt(data_key(m.encryption, view.keyring, target), data, m.encryption.aad,
                            f"the piece at byte {view.position}", target, view.position)
        super().__init__(data)


def _beside(path: str, view: views.View, suffix: str) -> str | None:
    """The piece of a segment's ``.indexes`` object that is its file ``suffix`` (``.index``),
    registered as a view; None where its manifest places none."""
    name = next((n for n, s in SIDE_FILES.items() if s == suffix), None)
    pieces = load_manifest(view.manifest).indexes
    if name not in pieces or not path.endswith(SEGMENT):
        return None
    indexes = path[:-len(SEGMENT)] + INDEXES
    piece = f"{indexes}[{name}]"
    views.register(piece, views.View("aiven-index", view.manifest, view.keyring, indexes, *pieces[name]))
    return piece


views.reader_for("aiven", ChunkSpool, ChunkMap, _beside)
views.reader_for("aiven-index", IndexPiece)
