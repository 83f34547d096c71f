"""KRaft control-record bodies: DumpLogSegmentsTest #16 (testDumpControlRecord) and #17 (snapshot)."""

from __future__ import annotations

import pytest
from kafka_wire import count, i16, i32, i64, string, tags, u16, uuid

from kdump.decoders.kafka_text import to_json
from kdump.errors import DecodeError
from kdump.format.control import encode_control_key, parse_control
from kdump.format.kraft_control import control_name, decode_control_value

F = True
DIR = "AAECAwQFBgcICQoLDA0ODw"


def leader_change(version: int) -> bytes:
    def voter(vid):
        return i32(vid) + (uuid(DIR) if version >= 1 else b"") + tags()
    return (i16(version) + i32(1) + count(3, F) + voter(1) + voter(2) + voter(3)
            + count(2, F) + voter(1) + voter(2) + tags())


def voters_record() -> bytes:
    def voter(vid):
        return (i32(vid) + uuid(DIR) + count(1, F) + string("CONTROLLER", F) + string(f"c{vid}", F) + u16(9093)
                + tags() + i16(0) + i16(1) + tags() + tags())
    return i16(0) + count(3, F) + voter(1) + voter(2) + voter(3) + tags()


def test_leader_change_v0():
    data = decode_control_value(2, leader_change(0))
    assert data == {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
                    "grantingVoters": [{"voterId": 1}, {"voterId": 2}]}
    assert control_name(2) == "LeaderChange"


def test_leader_change_v1_has_directory_ids():
    data = decode_control_value(2, leader_change(1))
    assert data["voters"][0] == {"voterId": 1, "voterDirectoryId": DIR}


def test_dls17_snapshot_header_footer():
    header = decode_control_value(3, i16(0) + i64(10000) + tags())
    assert '"lastContainedLogTimestamp":10000' in to_json(header)
    assert decode_control_value(4, i16(0) + tags()) == {"version": 0}
    assert [control_name(t) for t in (3, 4)] == ["SnapshotHeader", "SnapshotFooter"]


def test_dls16_kraft_version_and_voters():
    assert decode_control_value(5, i16(0) + i16(1) + tags()) == {"version": 0, "kRaftVersion": 1}
    data = decode_control_value(6, voters_record())
    assert [v["voterId"] for v in data["voters"]] == [1, 2, 3]
    assert data["voters"][1] == {"voterId": 2, "voterDirectoryId": DIR,
                                 "endpoints": [{"name": "CONTROLLER", "host": "c2", "port": 9093}],
                                 "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}
    assert [control_name(t) for t in (5, 6)] == ["KRaftVersion", "KRaftVoters"]


def test_format_control_uses_this_decoder():
    control = parse_control(encode_control_key(3), i16(0) + i64(10000) + tags())
    assert control.data == {"version": 0, "lastContainedLogTimestamp": 10000} and control.error is None
    bad = parse_control(encode_control_key(6), i16(0) + b"\x05")
    assert bad.data is None and "KRaftVoters" in bad.error


@pytest.mark.parametrize("ctype, value, message", [
    (0, b"\x00\x00\x00\x00\x00\x01", "no known body"),
    (1, b"", "no known body"),
    (7, b"\x00\x00", "no known body"),
    (3, b"\x00", "needs 2"),
    (3, None, "no value"),
    (3, i16(0) + i64(1), "tagged field count"),
    (3, i16(1) + i64(1) + tags(), "Can't read version 1 of SnapshotHeaderRecord"),
    (4, i16(-1) + tags(), "Can't read version -1 of SnapshotFooterRecord"),
    (4, i16(0) + tags() + b"\x00", "garbage"),
    (2, i16(0) + i32(1) + b"\xff\xff\xff\xff\x0f", "Tried to allocate a collection"),
])
def test_malformed_bodies(ctype, value, message):
    with pytest.raises(DecodeError, match=message):
        decode_control_value(ctype, value)
