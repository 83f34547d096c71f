"""Every data record of the real broker-written fixtures decodes (fixtures/real/PROVENANCE.md)."""

from __future__ import annotations

import collections
import functools
import json
import re
from pathlib import Path

import pytest

from kdump.decoders import cluster_metadata, consumer_offsets
from kdump.format.kraft_control import decode_control_value
from kdump.format.walk import Walker, decode_records
from kdump.storage.mapped import MappedFile
from kdump.storage.names import snapshot_id

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
LOG_NAME = re.compile(r"\.log(\.(swap|cleaned|deleted))?$")


@functools.lru_cache(maxsize=None)
def _records(path: Path) -> list:
    """(batch, record) pairs of a file, read once for all the tests of this module."""
    mf = MappedFile(str(path))
    walker = Walker(mf.buf)
    pairs = [(batch, record) for batch in walker for record in decode_records(mf.buf, batch)]
    assert walker.stop is None or walker.stop.kind != "invalid_magic", walker.stop
    return pairs


def _offsets_logs() -> list[Path]:
    return sorted(p for p in REAL.glob("**/__consumer_offsets-*/*") if LOG_NAME.search(p.name))


def _metadata_files() -> list[Path]:
    logs = sorted(REAL.glob("**/__cluster_metadata-0/*.log"))
    snapshots = sorted(p for p in REAL.glob("**/*.checkpoint")
                       if p.name == "bootstrap.checkpoint" or snapshot_id(p.name) is not None)
    return logs + snapshots


pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="fixtures/real not present")


def test_fixture_sets_are_found():
    assert len(_offsets_logs()) > 20
    assert any(p.name == "bootstrap.checkpoint" for p in _metadata_files())
    assert sum(1 for p in _metadata_files() if snapshot_id(p.name)) == 9


def test_every_consumer_offsets_record_decodes():
    seen = collections.Counter()
    for path in _offsets_logs():
        for batch, record in _records(path):
            if batch.is_control:
                continue
            decoded = consumer_offsets.decode(record.key, record.value)
            key_text, payload = consumer_offsets.text(decoded)
            assert key_text.startswith('{"type":"%d","data":{' % decoded["type_id"])
            assert payload == "<DELETE>" if record.value is None else payload.startswith('{"version":"')
            seen[(decoded["type"], decoded["version"])] += 1
    # What the 2019-2023 brokers of these sets wrote: offset commits v2/v3, group metadata v2/v3, tombstones.
    assert seen[("OFFSET_COMMIT", 3)] > 20000
    assert seen[("OFFSET_COMMIT", 2)] > 8000
    assert seen[("GROUP_METADATA", 3)] > 100
    assert seen[("GROUP_METADATA", None)] > 0


def test_consumer_group_members_expand_their_protocol():
    expanded = 0
    for path in _offsets_logs():
        for batch, record in _records(path):
            if batch.is_control or record.value is None:
                continue
            decoded = consumer_offsets.decode(record.key, record.value)
            if decoded["type_id"] != 2 or decoded["value"]["protocolType"] != "consumer":
                continue
            for member in decoded["value"]["members"]:
                assert isinstance(member["subscription"], dict), member
                assert isinstance(member["assignment"], dict), member
                expanded += 1
    assert expanded > 50


def test_every_cluster_metadata_record_and_control_body_decodes():
    types = collections.Counter()
    controls = collections.Counter()
    for path in _metadata_files():
        for batch, record in _records(path):
            if batch.is_control:
                data = decode_control_value(record.control.type, record.value)
                assert data["version"] == 0
                # kdump.format.control decodes the same body through this module
                assert record.control.data == data and record.control.error is None
                controls[record.control.type_name] += 1
                continue
            decoded = cluster_metadata.decode(record.key, record.value)
            assert cluster_metadata.text(decoded)[1].startswith('{"type":"%s","version":' % decoded["type"])
            types[decoded["type"]] += 1
    assert types["FEATURE_LEVEL_RECORD"] == 10
    assert types["REGISTER_BROKER_RECORD"] == 9
    assert types["REGISTER_CONTROLLER_RECORD"] == 9
    assert types["ZK_MIGRATION_STATE_RECORD"] == 9
    assert controls == {"SNAPSHOT_HEADER": 10, "SNAPSHOT_FOOTER": 10}


def test_snapshot_contents_match_the_bytes():
    path = next(p for p in _metadata_files() if p.name.startswith("00000000000000006342-"))
    records = list(_records(path))
    header = records[0][1].control.data
    assert header == {"version": 0, "lastContainedLogTimestamp": 1711300113735}
    broker = cluster_metadata.decode(None, records[3][1].value)
    assert broker["type"] == "REGISTER_BROKER_RECORD" and broker["version"] == 3
    value = broker["value"]
    assert value["brokerId"] == 0 and value["brokerEpoch"] == 26 and value["fenced"] is False
    assert [(e["name"], e["host"], e["port"]) for e in value["endPoints"]] == [
        ("EXTERNAL", "localhost", 9094), ("PLAINTEXT", "kafka", 9092)]
    assert value["features"] == [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}]
    assert value["logDirs"] == ["surWMNpmXk5bl_Ry5tk_EA"]    # tagged field 0 (v3)


def test_offsets_text_is_the_decoded_data():
    path = next(p for p in _offsets_logs() if "seanorth" in str(p))
    for batch, record in _records(path):
        decoded = consumer_offsets.decode(record.key, record.value)
        key_text, payload = consumer_offsets.text(decoded)
        assert json.loads(key_text)["data"] == decoded["key"]
        if payload != "<DELETE>":
            assert json.loads(payload)["data"] == decoded["value"]
