"""Aiven's ``.indexes`` object read piece by piece (where the manifest places each index) and
checked with verify's own side-file checks (kdump.check.tiered_side_files): objects built per
the plugin's documented format (tests/support/aiven.py) from a segment kdump's encoder wrote,
in a directory store (tests/kafka/test_tiered.py does the same over S3 with a broker's)."""

from __future__ import annotations

import json

import pytest

from kdump.check.broker_rule import encode_indexes
from kdump.check.tiered import check_partition
from kdump.encode import build_v2_batch, encode_snapshot
from kdump.state.remote_log import RemoteSegmentMeta
from kdump.storage.aiven_store import AivenStore
from support.aiven import write_segment

SID, TID = "S" * 22, "T" * 22
STEM = f"00000000000000000100-{SID}"


def _segment() -> dict[str, bytes]:
    log = b"".join(build_v2_batch([(0, 1000 + i, b"k%d" % i, b"v" * 3000)], base_offset=100 + i)
                   for i in range(20))
    index, timeindex = encode_indexes(log, 100)
    return {".log": log, ".index": index, ".timeindex": timeindex, ".snapshot": encode_snapshot([]),
            ".leader_epoch_checkpoint": b"0\n1\n0 0\n"}


def _check(root, **kw):
    files = _segment()
    write_segment(root / f"t-{TID}" / "0", STEM, files, 16384, **kw)
    meta = RemoteSegmentMeta(SID, "t", TID, 0, 100, 119, len(files[".log"]), True, 1, 5)
    return lambda ring=None: [(loc.path, loc.finding.kind, loc.finding.message) for loc in check_partition(
        AivenStore(str(root), ring), {SID: meta}, [], "t", 0, read=True).findings]


def test_clean_pieces_have_no_finding(tmp_path):
    assert _check(tmp_path, compression=False)() == []


def test_an_offset_index_entry_past_the_log(tmp_path):
    check = _check(tmp_path, compression=True)
    obj = tmp_path / f"t-{TID}" / "0" / f"{STEM}.indexes"
    piece = json.loads(obj.with_suffix(".rsm-manifest").read_text())["segmentIndexes"]["offset"]
    body = bytearray(obj.read_bytes())
    body[piece["position"] + 4:piece["position"] + 8] = (10 ** 9).to_bytes(4, "big")
    obj.write_bytes(bytes(body))
    assert [(p, k) for p, k, _ in check()] == [(f"{obj}[offset]", "index_past_end"),
                                               (f"{obj}[offset]", "index_not_increasing")]


def test_a_cut_indexes_object(tmp_path):
    check = _check(tmp_path, compression=False)
    obj = tmp_path / f"t-{TID}" / "0" / f"{STEM}.indexes"
    pieces = json.loads(obj.with_suffix(".rsm-manifest").read_text())["segmentIndexes"]
    leader = pieces["leaderEpoch"]
    obj.write_bytes(obj.read_bytes()[:leader["position"] + 2])
    assert check() == [(f"{obj}[leaderEpoch]", "unreadable",
                        f"the object ends at byte {leader['position'] + 2}, inside the piece its manifest places at "
                        f"{leader['position']} ({leader['size']} bytes)")]


def test_encrypted_pieces(tmp_path):
    pytest.importorskip("cryptography")
    from support.aiven import rsa_key

    key, ring = rsa_key(tmp_path)
    assert _check(tmp_path / "clean", compression=True, key=key)(str(ring)) == []
    check = _check(tmp_path / "store", compression=True, key=key)     # (a process reads each piece once)
    obj = tmp_path / "store" / f"t-{TID}" / "0" / f"{STEM}.indexes"
    piece = json.loads(obj.with_suffix(".rsm-manifest").read_text())["segmentIndexes"]["timestamp"]
    body = bytearray(obj.read_bytes())
    body[piece["position"] + piece["size"] - 1] ^= 0xFF        # its tag
    obj.write_bytes(bytes(body))
    assert check(str(ring)) == [(f"{obj}[timestamp]", "unreadable",
                                 f"the piece at byte {piece['position']} fails its AES-GCM tag check")]
