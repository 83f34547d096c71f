"""Aiven's manifest pieces (kdump.format.aiven_manifest) and a segment moved by its custom
metadata (kdump.storage.aiven_store), from objects built per the plugin's documented format."""

from __future__ import annotations

import json

import pytest

from kdump.format import aiven_manifest as AM
from kdump.state.remote_log import RemoteSegmentMeta
from kdump.storage.aiven_store import AivenStore
from support import aiven


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        if n < 0x80:
            return out + bytes([n])
        out += bytes([n & 0x7F | 0x80])
        n >>= 7


def _compact(text: str) -> bytes:
    return _uvarint(len(text) + 1) + text.encode()


def _custom(fields: dict[int, bytes]) -> bytes:
    return _uvarint(len(fields)) + b"".join(_uvarint(t) + _uvarint(len(v)) + v for t, v in sorted(fields.items()))


def test_custom_metadata_fields():
    raw = _custom({0: _uvarint(2 * 300), 1: _compact("other/"), 2: _compact("t-x/0/seg")})
    assert AM.custom_metadata(raw) == {0: 300, 1: "other/", 2: "t-x/0/seg"}
    assert AM.custom_metadata(b"") == {}
    with pytest.raises(AM.ManifestError, match="cut short"):
        AM.custom_metadata(raw[:3])


@pytest.mark.parametrize("sizes", [[300, 301, 65000, 9], [5, 5, 5, 5, 2]])
def test_variable_chunk_sizes(sizes):
    assert AM.chunk_sizes(aiven._sizes_codec(sizes)) == sizes


def test_manifest_errors():
    with pytest.raises(AM.ManifestError, match="manifest version '2': kdump reads version 1"):
        AM.parse_manifest(json.dumps({"version": "2"}).encode())
    bad = {"version": "1", "chunkIndex": {"type": "variable", "originalChunkSize": 10, "originalFileSize": 25,
                                          "transformedChunks": aiven._sizes_codec([3, 4])}}
    with pytest.raises(AM.ManifestError, match="lists 2 chunks for 25 bytes"):
        AM.parse_manifest(json.dumps(bad).encode())
    m = AM.parse_manifest(json.dumps({**bad, "chunkIndex": {**bad["chunkIndex"], "transformedChunks":
                                                           aiven._sizes_codec([3, 4, 2])}}).encode())
    assert [c.original_size for c in m.chunks] == [10, 10, 5] and m.transformed_size == 9
    assert m.chunks_for(9, 11) == m.chunks[:2]


def test_segment_moved_by_custom_metadata(tmp_path):
    """Tag 1 (prefix) and 2 (key) put a segment's objects elsewhere: the store looks there (a
    directory store's prefix is below its directory, a URL's below its bucket)."""
    aiven.write_segment(tmp_path / "store" / "moved", "seg-A", {".log": b"x" * 100}, 64, False)
    store = AivenStore(str(tmp_path / "store"))
    meta = RemoteSegmentMeta("A" * 22, "t", "B" * 22, 0, 0, 9, 100, True, 1, 5,
                             custom={1: "moved/", 2: "seg-A"})
    found = store.moved(meta)
    assert found is not None and sorted(found.objects) == [".indexes", ".log", ".rsm-manifest"]
    assert store.segment_log(found).size == 100
