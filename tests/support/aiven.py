"""Aiven's tiered-storage-for-apache-kafka objects built from a LocalTieredStorage tree, as its
RemoteStorageManager writes them (the documented format: keys, chunks, zstd per chunk,
AES-GCM with an RSA-OAEP SHA3-512 wrapped data key, the .indexes object, the JSON manifest).
No real Aiven writer runs here: its jars are not on the registries this machine reaches."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

INDEX_ORDER = ((".index", "offset"), (".timeindex", "timestamp"), (".snapshot", "producerSnapshot"),
               (".leader_epoch_checkpoint", "leaderEpoch"), (".txnindex", "transaction"))


def rsa_key(directory: Path, key_id: str = "key1") -> tuple[object, Path]:
    """A fresh RSA key pair, its private PEM file and a key ring naming it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(65537, 2048)
    pem = directory / f"{key_id}.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    ring = directory / "keyring.properties"
    ring.write_text(f"rsm.config.encryption.key.pair.id={key_id}\n"
                    f"rsm.config.encryption.key.pairs.{key_id}.private.key.file={pem.name}\n")
    return key, ring


def _oaep_wrap(key, data: bytes) -> bytes:
    h = hashlib.sha3_512
    n, e = key.public_key().public_numbers().n, key.public_key().public_numbers().e
    k, hlen = (n.bit_length() + 7) // 8, 64

    def mgf1(seed, length):
        return b"".join(h(seed + i.to_bytes(4, "big")).digest() for i in range(-(-length // hlen)))[:length]

    db = h(b"").digest() + b"\0" * (k - len(data) - 2 * hlen - 2) + b"\1" + data
    seed = os.urandom(hlen)
    masked_db = bytes(a ^ b for a, b in zip(db, mgf1(seed, len(db))))
    masked_seed = bytes(a ^ b for a, b in zip(seed, mgf1(masked_db, hlen)))
    return pow(int.from_bytes(b"\0" + masked_seed + masked_db, "big"), e, n).to_bytes(k, "big")


def _sizes_codec(values: list[int]) -> str:
    import zstandard

    if len(values) == 1:
        one = b"\0\0\0\1" + values[0].to_bytes(4, "big")
        return base64.b64encode(zstandard.ZstdCompressor().compress(one)).decode()
    base = min(values[:-1])
    width = max(max(1, ((v - base).bit_length() + 7) // 8) for v in values[:-1])
    raw = (len(values).to_bytes(4, "big") + base.to_bytes(4, "big") + bytes([width])
           + b"".join((v - base).to_bytes(width, "big") for v in values[:-1]) + values[-1].to_bytes(4, "big"))
    return base64.b64encode(zstandard.ZstdCompressor().compress(raw)).decode()


def write_segment(out: Path, main: str, files: dict[str, bytes], chunk_size: int, compression: bool,
                  key=None, key_id: str = "key1") -> None:
    """``<out>/<main>.{log,indexes,rsm-manifest}`` from one segment's LocalTieredStorage files."""
    import zstandard
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aes = aad = None
    if key is not None:
        aes, aad = os.urandom(32), os.urandom(32)

    def encrypt(b: bytes) -> bytes:
        iv = os.urandom(12)
        return iv + AESGCM(aes).encrypt(iv, b, aad)

    log = files[".log"]
    chunks = [log[i:i + chunk_size] for i in range(0, len(log), chunk_size)]
    stored = []
    for c in chunks:
        c = zstandard.ZstdCompressor(write_content_size=True).compress(c) if compression else c
        stored.append(encrypt(c) if aes else c)
    path = out / f"{main}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(stored))
    sizes = [len(s) for s in stored]
    if compression:
        index = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                 "transformedChunks": _sizes_codec(sizes)}
    else:
        index = {"type": "fixed", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                 "transformedChunkSize": sizes[0], "finalTransformedChunkSize": sizes[-1]}
    blob, indexes = b"", {}
    for suffix, name in INDEX_ORDER:
        data = files.get(suffix, b"")
        data = encrypt(data) if aes and data else data
        indexes[name] = {"position": len(blob), "size": len(data)}
        blob += data
    (out / f"{main}.indexes").write_bytes(blob)
    manifest = {"version": "1", "chunkIndex": index, "segmentIndexes": indexes, "compression": compression}
    if aes:
        manifest["encryption"] = {"dataKey": f"{key_id}:{base64.b64encode(_oaep_wrap(key, aes)).decode()}",
                                  "aad": base64.b64encode(aad).decode()}
    (out / f"{main}.rsm-manifest").write_text(json.dumps(manifest))


def from_local_tiered(src: Path, out: Path, chunk_size: int = 16384, compression: bool = False, key=None) -> None:
    """Every segment of a LocalTieredStorage tree (``src``: its kafka-tiered-storage folder) in
    Aiven's layout under ``out`` (the bucket's key.prefix)."""
    for part in sorted(p for p in src.iterdir() if p.is_dir()):
        rest, topic_id = part.name[:-23], part.name[-22:]
        topic, _, partition = rest.rpartition("-")
        segs: dict[str, dict[str, bytes]] = {}
        for f in part.iterdir():
            stem, dot, suffix = f.name.partition(".")
            segs.setdefault(stem, {})["." + suffix] = f.read_bytes()
        for stem, files in sorted(segs.items()):
            write_segment(out / f"{topic}-{topic_id}" / partition, stem, files, chunk_size, compression, key)
