"""Aiven's tiered-storage-for-apache-kafka: a segment's ``.rsm-manifest`` and its pieces, no I/O.

The plugin cuts a segment's ``.log`` into chunks of ``originalChunkSize`` bytes (the last may
be shorter); each chunk is zstd-compressed on its own (``compression``), then AES-GCM
encrypted (``encryption``: a 12-byte IV, the ciphertext, a 16-byte tag, the manifest's
``aad``). The chunk index says how large each stored (transformed) chunk is: ``fixed`` (one
size, and the last chunk's) or ``variable`` (a list, zstd-compressed and base64 in the
JSON). The ``.indexes`` object is the offset, time, producer-snapshot, leader-epoch and
transaction indexes one after another (each encrypted alone, never compressed), where the
manifest's ``segmentIndexes`` say (position, size). The AES data key is in the manifest as
``<key id>:<base64 of the key wrapped by RSA-OAEP (SHA3-512, MGF1 SHA3-512)>``.

A segment's custom metadata (``__remote_log_metadata``) is a tagged-fields struct: tag 0
the remote size, 1 an object prefix and 2 an object key that override the layout's own.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import NamedTuple

from kdump.errors import KdumpError

IV_SIZE, TAG_SIZE = 12, 16
INDEX_NAMES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")


class Chunk(NamedTuple):
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


class Encryption(NamedTuple):
    key_id: str
    wrapped_key: bytes
    aad: bytes


class Manifest(NamedTuple):
    original_chunk_size: int
    original_file_size: int
    chunks: list[Chunk]
    compression: bool
    encryption: Encryption | None
    indexes: dict[str, tuple[int, int]]        # name -> (position, size) in the .indexes object

    @property
    def transformed_size(self) -> int:
        return sum(c.transformed_size for c in self.chunks)

    def chunks_for(self, start: int, end: int) -> list[Chunk]:
        """The chunks holding original bytes [start, end)."""
        size = self.original_chunk_size
        return self.chunks[start // size:(max(end, start + 1) - 1) // size + 1]


class ManifestError(KdumpError):
    pass


def _int(d: dict, name: str) -> int:
    v = d.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ManifestError(f"the manifest's {name} is {v!r}, not a size")
    return v


def chunk_sizes(text: str) -> list[int]:
    """A variable chunk index's ``transformedChunks``: base64 of a zstd frame of
    count (int32), then, for more than one value, base (int32), bytes per value (1 byte),
    count - 1 values of that width above base, and the last value in full (int32); big-endian."""
    import zstandard

    try:
        raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(text, validate=True),
                                                      max_output_size=64 << 20)
    except (ValueError, zstandard.ZstdError) as e:
        raise ManifestError(f"transformedChunks is not base64 of a zstd frame: {e}") from None
    if len(raw) < 4:
        raise ManifestError("transformedChunks is cut short")
    count = int.from_bytes(raw[:4], "big")
    if count == 0:
        return []
    if count == 1:
        if len(raw) != 8:
            raise ManifestError("transformedChunks is not one value")
        return [int.from_bytes(raw[4:8], "big")]
    base, width = int.from_bytes(raw[4:8], "big"), raw[8] if len(raw) > 8 else 0
    if not 1 <= width <= 4 or len(raw) != 9 + (count - 1) * width + 4:
        raise ManifestError(f"transformedChunks holds {len(raw)} bytes for {count} values of {width} bytes")
    values = [base + int.from_bytes(raw[9 + i * width:9 + (i + 1) * width], "big") for i in range(count - 1)]
    return values + [int.from_bytes(raw[-4:], "big")]


def parse_manifest(data: bytes) -> Manifest:
    try:
        d = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ManifestError(f"not a JSON manifest: {e}") from None
    if not isinstance(d, dict) or str(d.get("version")) != "1":
        raise ManifestError(f"manifest version {d.get('version') if isinstance(d, dict) else None!r}: "
                            "kdump reads version 1")
    ci = d.get("chunkIndex")
    if not isinstance(ci, dict):
        raise ManifestError("the manifest has no chunkIndex")
    size, total = _int(ci, "originalChunkSize"), _int(ci, "originalFileSize")
    if size == 0:
        raise ManifestError("the manifest's originalChunkSize is 0")
    count = -(-total // size)
    if ci.get("type") == "fixed":
        each, last = _int(ci, "transformedChunkSize"), _int(ci, "finalTransformedChunkSize")
        transformed = [each] * (count - 1) + [last] if count else []
    elif ci.get("type") == "variable":
        transformed = chunk_sizes(str(ci.get("transformedChunks", "")))
        if len(transformed) != count:
            raise ManifestError(f"the chunk index lists {len(transformed)} chunks for {total} bytes "
                                f"in chunks of {size}")
    else:
        raise ManifestError(f"chunk index type {ci.get('type')!r}: kdump reads fixed and variable")
    chunks, opos, tpos = [], 0, 0
    for t in transformed:
        o = min(size, total - opos)
        chunks.append(Chunk(opos, o, tpos, t))
        opos, tpos = opos + o, tpos + t
    enc = d.get("encryption")
    encryption = None
    if enc is not None:
        key_id, sep, wrapped = str(enc.get("dataKey", "")).partition(":")
        try:
            encryption = Encryption(key_id, base64.b64decode(wrapped, validate=True),
                                    base64.b64decode(str(enc.get("aad", "")), validate=True))
        except ValueError:
            sep = ""
        if not sep or not key_id:
            raise ManifestError("the manifest's encryption dataKey is not <key id>:<base64>")
    si = d.get("segmentIndexes") or {}
    indexes = {n: (_int(si[n], "position"), _int(si[n], "size")) for n in INDEX_NAMES if isinstance(si.get(n), dict)}
    return Manifest(size, total, chunks, bool(d.get("compression")), encryption, indexes)


def oaep_unpad(em: bytes, key_bytes: int) -> bytes:
    """RSAES-OAEP decoding (RFC 8017 7.1.2) with SHA3-512 and MGF1 over SHA3-512, empty label."""
    h = hashlib.sha3_512
    hlen = h().digest_size
    em = em.rjust(key_bytes, b"\0")
    if len(em) != key_bytes or key_bytes < 2 * hlen + 2 or em[0] != 0:
        raise ManifestError("the wrapped data key does not decrypt with this RSA key")

    def mgf1(seed: bytes, n: int) -> bytes:
        return b"".join(h(seed + i.to_bytes(4, "big")).digest() for i in range(-(-n // hlen)))[:n]

    masked_seed, masked_db = em[1:1 + hlen], em[1 + hlen:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, mgf1(masked_db, hlen)))
    db = bytes(a ^ b for a, b in zip(masked_db, mgf1(seed, len(masked_db))))
    rest = db[hlen:].lstrip(b"\0")
    if db[:hlen] != h(b"").digest() or not rest.startswith(b"\1"):
        raise ManifestError("the wrapped data key does not decrypt with this RSA key")
    return rest[1:]


def custom_metadata(data: bytes | None) -> dict[int, object]:
    """The tagged fields of a segment's customMetadata: 0 remote size, 1 prefix, 2 key."""
    if not data:
        return {}
    pos = 0

    def uvarint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise ManifestError("custom metadata is cut short")
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    out: dict[int, object] = {}
    for _ in range(uvarint()):
        tag, size = uvarint(), uvarint()
        field, end = pos, pos + size
        if tag in (1, 2):
            n = uvarint() - 1
            out[tag] = data[pos:pos + n].decode("utf-8", "replace") if n >= 0 else None
        elif tag == 0:
            v = uvarint()
            out[tag] = (v >> 1) ^ -(v & 1)
        pos = max(end, field)
    return out
