"""``--remote-layout aiven``: Aiven's tiered-storage-for-apache-kafka objects, read only.

Keys: ``<prefix><topic>-<topic id>/<partition>/<20-digit start offset>-<segment id>.<suffix>``
with the suffixes ``log``, ``indexes`` and ``rsm-manifest`` (``kdump.format.aiven_manifest``
says what is in them). ``--remote-storage`` is the bucket URL with the plugin's
``key.prefix`` (or a directory holding the same tree, its filesystem backend's). A
segment's custom metadata may name another prefix or key: ``segments`` takes ``keys``.

A ``.log`` object is read as the segment it holds, a chunk at a time
(``ChunkSpool``: only the chunks a reader needs are fetched, detransformed and written into
a sparse local copy, as ``kdump.storage.spool`` does for plain objects). An encrypted one
needs the key ring (``--remote-keyring FILE``): lines ``<key id>=<private key PEM file>``, or
the plugin's own ``[rsm.config.]encryption.key.pairs.<id>.private.key.file=<file>``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable

from kdump.errors import InputError, UsageError, install_hint
from kdump.format import aiven_manifest as AM
from kdump.storage import fs, remote, views
from kdump.storage.mapped import read_small
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



_manifests: dict[str, AM.Manifest] = {}


def load_manifest(path: str) -> AM.Manifest:
    m = _manifests.get(path)
    if m is None:
        try:
            m = _manifests[path] = AM.parse_manifest(read_small(path, 64 << 20))
        except AM.ManifestError as e:
            raise InputError(e.message, file=path) from None
    return m


def read_keyring(path: str) -> dict[str, str]:
    """key id -> private key PEM file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"cannot read the key ring: {e.strerror}", file=path) from None
    ring = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise InputError(f"line {n}: not <key id>=<private key file>", file=path)
        key, value = key.strip(), value.strip()
        m = re.fullmatch(r"(?:rsm\.config\.)?encryption\.key\.pairs\.(.+)\.private\.key\.file", key)
        if m:
            key = m.group(1)
        elif "." in key and key.startswith(("rsm.config.", "encryption.")):
            continue            # the plugin's other settings
        ring[key] = value if os.path.isabs(value) else os.path.join(os.path.dirname(path), value)
    return ring


_data_keys: dict[tuple[bytes, str], bytes] = {}      # (wrapped key, key ring) -> the key: unwrapped once


def data_key(enc: AM.Encryption, keyring: str | None, where: str) -> bytes:
    """The segment's AES key, unwrapped with the key ring's RSA private key (once: its
    chunks and each piece of its .indexes object ask)."""
    if keyring is not None and (enc.wrapped_key, keyring) in _data_keys:
        return _data_keys[enc.wrapped_key, keyring]
    key = _unwrap(enc, keyring, where)
    _data_keys[enc.wrapped_key, keyring or ""] = key      # (_unwrap refused a missing key ring)
    return key


def _unwrap(enc: AM.Encryption, keyring: str | None, where: str) -> bytes:
    if keyring is None:
        raise UsageError("the segment is encrypted: name the key ring with --remote-keyring FILE", file=where)
    pem = read_keyring(keyring).get(enc.key_id)
    if pem is None:
        raise InputError(f"the key ring has no key {enc.key_id!r}, which wrapped this segment's key", file=where)
    try:
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError:
        raise UsageError(f"an encrypted segment needs the cryptography package{install_hint('remote')}") from None
    try:
        with open(pem, "rb") as f:
            key = load_pem_private_key(f.read(), None)
    except (OSError, ValueError, TypeError) as e:
        raise InputError(f"cannot read the private key: {e}", file=pem) from None
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    if not isinstance(key, RSAPrivateKey):
        raise InputError("not an RSA private key", file=pem)
    numbers = key.private_numbers()
    n, d = numbers.public_numbers.n, numbers.d
    size = (n.bit_length() + 7) // 8
    c = int.from_bytes(enc.wrapped_key, "big")
    if c >= n:
        raise InputError("the wrapped data key does not decrypt with this RSA key", file=where)
    try:
        return AM.oaep_unpad(pow(c, d, n).to_bytes(size, "big"), size)
    except AM.ManifestError as e:
        raise InputError(e.message, file=where) from None


class ChunkSpool:
    """The original bytes of a chunked ``.log`` object in a sparse local copy, chunk by chunk."""

    def __init__(self, path: str, view: views.View) -> None:
        from kdump.storage.spool import Spool

        self.path = path
        self.manifest = load_manifest(view.manifest)
        self.size = self.manifest.original_file_size
        self._key = data_key(self.manifest.encryption, view.keyring, path) if self.manifest.encryption else None
        self._copy = Spool(path, self.size)        # the local file only: its fetches are ours
        self.fd = self._copy.fd
        self._done: set[int] = set()
        self._lock = threading.Lock()
        self._read: Callable[[int, int], bytes] | None = None

    def need(self, start: int, end: int) -> None:
        with self._lock:
            for c in self.manifest.chunks_for(start, min(end, self.size)):
                if c.original_position in self._done or not c.original_size:
                    continue
                data = self._detransform(self._fetch(c.transformed_position, c.transformed_size), c)
                view = memoryview(data)
                done = 0
                while done < len(view):
                    done += os.pwrite(self.fd, view[done:], c.original_position + done)
                self._done.add(c.original_position)

    def _fetch(self, position: int, size: int) -> bytes:
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
        return data

    def _detransform(self, data: bytes, c: AM.Chunk) -> bytes:
        if self._key is not None:
            assert self.manifest.encryption is not None
            data = _decrypt(self._key, data, self.manifest.encryption.aad,
                            f"the chunk at byte {c.transformed_position}", self.path, c.transformed_position)
        if self.manifest.compression:
            import zstandard

            try:
                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=c.original_size)
            except zstandard.ZstdError as e:
                raise InputError(f"the chunk at byte {c.transformed_position} does not decompress: {e}",
                                 file=self.path, position=c.transformed_position) from None
        if len(data) != c.original_size:
            raise InputError(f"the chunk at byte {c.transformed_position} holds {len(data)} bytes, not the "
                             f"{c.original_size} its manifest lists", file=self.path, position=c.transformed_position)
        return data

    def read(self, start: int, length: int) -> bytes:
        self.need(start, start + length)
        return os.pread(self.fd, length, start) if length > 0 else b""

    def close(self) -> None:
        self._copy.close()


def _decrypt(key: bytes, data: bytes, aad: bytes, what: str, path: str, position: int) -> bytes:
    """An AES-GCM piece: its 12-byte IV, the ciphertext, the 16-byte tag."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        return AESGCM(key).decrypt(data[:AM.IV_SIZE], data[AM.IV_SIZE:], aad)
    except (InvalidTag, ValueError):
        raise InputError(f"{what} fails its AES-GCM tag check", file=path, position=position) from None


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
            data = _decrypt(data_key(m.encryption, view.keyring, target), data, m.encryption.aad,
                            f"the piece at byte {view.position}", target, view.position)
        super().__init__(data)


views.reader_for("aiven", ChunkSpool)
views.reader_for("aiven-index", IndexPiece)
