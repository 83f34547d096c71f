"""Fuzz the parsers of the files beside the segments.

Input: ``selector | file bytes``; the selector picks the parser: ``.index``,
``.timeindex``, ``.txnindex``, producer ``.snapshot``, the checkpoint kinds,
``partition.metadata``, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.
Oracle: only KdumpErrors escape; index parsers never raise on content and their sanity
checks return lists of strings; entries only come from whole slots; results serialise.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import expect  # noqa: E402

from kdump.encode import encode_snapshot  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format import checkpoint, index, logdir_files, snapshot, timeindex, txnindex  # noqa: E402

BASE = 1 << 33


def _index(data: bytes) -> None:
    idx = index.parse_index(data, BASE)
    expect(len(idx.entries) <= len(data) // 8, "more index entries than slots")
    expect(idx.partial_bytes == len(data) % 8, "partial bytes")
    expect(all(isinstance(m, str) for m in idx.sanity_check("x.index")), "sanity check")
    json.dumps([e.to_dict() for e in idx.entries])


def _timeindex(data: bytes) -> None:
    tidx = timeindex.parse_timeindex(data, BASE)
    expect(len(tidx.entries) <= len(data) // 12, "more time index entries than slots")
    expect(all(isinstance(m, str) for m in tidx.sanity_check("x.timeindex", "scala")), "sanity check")
    json.dumps([e.to_dict() for e in tidx.entries])


def _txnindex(data: bytes) -> None:
    t = txnindex.parse_txnindex(data)
    expect(len(t.entries) == len(data) // 34 and t.partial_bytes == len(data) % 34, "txnindex slots")
    txnindex.version_errors(t.entries, "x.txnindex")
    txnindex.sanity_check_txnindex(t.entries, BASE, "x.txnindex")
    expect(txnindex.encode_txnindex(t.entries) == data[:len(data) - t.partial_bytes], "txnindex round trip")


def _snapshot(data: bytes) -> None:
    try:
        snap = snapshot.parse_snapshot(data)
    except KdumpError:
        return
    expect(len(snap.entries) * 46 + 10 + snap.trailing_bytes == len(data), "snapshot sizes")
    if snap.crc_valid and not snap.trailing_bytes:
        expect(encode_snapshot(snap.entries) == data, "snapshot round trip")
    json.dumps([e.to_dict() for e in snap.entries])
    [e.first_sequence for e in snap.entries]


def _checkpoint(kind: str):
    def parse(data: bytes) -> None:
        try:
            entries = checkpoint.parse_checkpoint(data, kind, "x")
        except KdumpError:
            return
        if entries:
            again = checkpoint.parse_checkpoint(checkpoint.encode_checkpoint(entries), kind)
            expect(again == entries, f"{kind} round trip")
    return parse


def _json_safe(parse):
    def run(data: bytes) -> None:
        try:
            json.dumps(parse(data), default=str)
        except KdumpError:
            pass
    return run


PARSERS = [_index, _timeindex, _txnindex, _snapshot, *(_checkpoint(k) for k in checkpoint.KINDS),
           _json_safe(logdir_files.parse_partition_metadata), _json_safe(logdir_files.parse_meta_properties),
           _json_safe(logdir_files.parse_quorum_state), _json_safe(logdir_files.parse_clean_shutdown),
           _json_safe(lambda d: logdir_files.parse_uuid(d.decode("latin-1")))]


def check(data: bytes) -> None:
    if not data:
        return
    PARSERS[data[0] % len(PARSERS)](data[1:])


if __name__ == "__main__":
    _common.main(check)
