"""Aiven's manifests and keys: each manifest parsed once, the key ring read, a segment's data
key unwrapped once, and one AES-GCM piece decrypted (``kdump.storage.aiven_store``'s readers)."""

from __future__ import annotations

import os
import re

from kdump.errors import InputError, UsageError, install_hint
from kdump.format import aiven_manifest as AM
from kdump.storage.mapped import read_small

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


def decrypt(key: bytes, data: bytes, aad: bytes, what: str, path: str, position: int) -> bytes:
    """An AES-GCM piece: its 12-byte IV, the ciphertext, the 16-byte tag."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        return AESGCM(key).decrypt(data[:AM.IV_SIZE], data[AM.IV_SIZE:], aad)
    except (InvalidTag, ValueError):
        raise InputError(f"{what} fails its AES-GCM tag check", file=path, position=position) from None
