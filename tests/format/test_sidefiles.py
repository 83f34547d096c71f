"""Producer snapshots, text checkpoints and the small metadata files of a log dir."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from kdump.encode import encode_clean_shutdown, encode_offsets, encode_partition_metadata, encode_snapshot, encode_uuid
from kdump.errors import InvalidFileError, KdumpError, TruncatedError, UnknownFileKindError
from kdump.format.checkpoint import (
    KINDS,
    LEADER_EPOCH,
    EpochEntry,
    OffsetEntry,
    encode_leader_epochs,
    parse_checkpoint,
)
from kdump.format.crc import crc32c
from kdump.format.logdir_files import (
    parse_clean_shutdown,
    parse_meta_properties,
    parse_partition_metadata,
    parse_properties,
    parse_quorum_state,
    parse_uuid,
)
from kdump.format.snapshot import parse_snapshot
from kdump.model import ProducerEntry

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "fixtures" / "real"


def _real(name_glob: str) -> list[Path]:
    return sorted(p for p in REAL.rglob(name_glob) if p.is_file())


def _id(p: Path) -> str:
    return str(p.relative_to(REAL))


SNAPSHOTS = _real("*.snapshot")
CHECKPOINTS = [p for kind in KINDS for p in _real(kind)]
PARTITION_METADATA = _real("partition.metadata")
META_PROPERTIES = _real("meta.properties")


def test_real_side_files_found():
    assert len(SNAPSHOTS) >= 200 and len(CHECKPOINTS) >= 490 and len(PARTITION_METADATA) >= 180
    assert len(META_PROPERTIES) >= 10
    assert _real("quorum-state") and len(_real(".kafka_cleanshutdown")) == 2


# -- producer snapshots ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", SNAPSHOTS, ids=_id)
def test_real_snapshot(path):
    data = path.read_bytes()
    snap = parse_snapshot(data, strict=True)
    assert snap.version == 1 and snap.crc_valid and snap.crc_error is None and snap.trailing_bytes == 0
    assert encode_snapshot(snap.entries) == data


def test_real_snapshots_with_producers():
    with_entries = [parse_snapshot(p.read_bytes()) for p in SNAPSHOTS]
    producers = [e for s in with_entries for e in s.entries]
    assert len(producers) >= 6
    assert all(e.producer_id >= 0 and e.last_sequence >= 0 and e.current_txn_first_offset == -1 for e in producers)


ENTRY = ProducerEntry(producer_id=9001, producer_epoch=3, last_sequence=41, last_offset=1234, offset_delta=4,
                      timestamp=1_700_000_000_123, coordinator_epoch=-1, current_txn_first_offset=-1)


def test_snapshot_round_trip_and_empty():
    data = encode_snapshot([ENTRY, ENTRY._replace(producer_id=9002, current_txn_first_offset=1200)])
    assert len(data) == 10 + 2 * 46
    snap = parse_snapshot(data)
    assert snap.entries[0] == ENTRY and snap.entries[1].current_txn_first_offset == 1200
    assert snap.entries[0].first_sequence == 37
    empty = encode_snapshot([])
    assert len(empty) == 10 and parse_snapshot(empty).entries == []


def test_snapshot_bad_crc_keeps_entries():
    data = bytearray(encode_snapshot([ENTRY]))
    data[20] ^= 0x01
    snap = parse_snapshot(bytes(data))
    assert not snap.crc_valid and len(snap.entries) == 1
    stored, computed = struct.unpack_from(">I", data, 2)[0], crc32c(bytes(data[6:]))
    assert snap.crc == stored and snap.computed_crc == computed
    assert snap.crc_error == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                              f"Computed crc: {computed}")
    with pytest.raises(InvalidFileError) as e:
        parse_snapshot(bytes(data), strict=True)
    assert e.value.message == snap.crc_error and e.value.position == 2


def test_snapshot_trailing_bytes_are_reported_and_break_the_crc():
    data = encode_snapshot([ENTRY]) + b"\x00\x00\x07"
    snap = parse_snapshot(data)
    assert snap.trailing_bytes == 3 and not snap.crc_valid and len(snap.entries) == 1


@pytest.mark.parametrize("version", [0, 2, -1, 0x7FFF])
def test_snapshot_unknown_version(version):
    data = struct.pack(">h", version) + encode_snapshot([ENTRY])[2:]
    with pytest.raises(InvalidFileError) as e:
        parse_snapshot(data)
    assert e.value.message == f"Snapshot contained an unknown file version {version}" and e.value.position == 0


@pytest.mark.parametrize("cut", [0, 1, 2, 5, 9])
def test_snapshot_truncated_header(cut):
    with pytest.raises(TruncatedError) as e:
        parse_snapshot(encode_snapshot([ENTRY])[:cut])
    assert e.value.position is not None and "Snapshot failed schema validation" in e.value.message


def test_snapshot_truncated_entries_and_huge_count():
    data = encode_snapshot([ENTRY, ENTRY])
    with pytest.raises(TruncatedError) as e:
        parse_snapshot(data[:-1])
    assert e.value.position == 10 + 46
    # A count of 2^31-1 with 46 bytes present must fail before anything is allocated for it.
    huge = data[:6] + struct.pack(">i", 0x7FFFFFFF) + data[10:56]
    with pytest.raises(TruncatedError):
        parse_snapshot(huge)
    negative = data[:6] + struct.pack(">i", -1) + data[10:]
    with pytest.raises(InvalidFileError) as e:
        parse_snapshot(negative)
    assert "cannot be negative" in e.value.message


def test_encode_snapshot_rejects_out_of_range():
    with pytest.raises(InvalidFileError):
        encode_snapshot([ENTRY._replace(producer_epoch=40000)])


# -- text checkpoints -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CHECKPOINTS, ids=_id)
def test_real_checkpoint(path):
    data = path.read_bytes()
    entries = parse_checkpoint(data, path.name, str(path))
    if not data:
        assert entries == []
        return
    if path.name == LEADER_EPOCH:
        assert all(isinstance(e, EpochEntry) for e in entries)
        assert [e.epoch for e in entries] == sorted(e.epoch for e in entries)
        assert encode_leader_epochs(entries) == data
    else:
        assert all(isinstance(e, OffsetEntry) and e.partition >= 0 for e in entries)
        # Kafka writes a HashMap: the order is Java's, so compare as sets.
        again = parse_checkpoint(encode_offsets(entries), path.name)
        assert sorted(again) == sorted(entries)


def test_checkpoint_round_trip_with_dotted_topics():
    entries = [OffsetEntry("my.topic.v1", 3, 42), OffsetEntry("__consumer_offsets", 49, 0),
               OffsetEntry("a-b_c", 0, 2**63 - 1)]
    data = encode_offsets(entries)
    assert data == b"0\n3\nmy.topic.v1 3 42\n__consumer_offsets 49 0\na-b_c 0 9223372036854775807\n"
    assert parse_checkpoint(data, "replication-offset-checkpoint") == entries
    epochs = [EpochEntry(0, 0), EpochEntry(4, 1200)]
    assert parse_checkpoint(encode_leader_epochs(epochs), LEADER_EPOCH) == epochs


def test_checkpoint_reading_rules():
    assert parse_checkpoint(b"", LEADER_EPOCH) == []
    assert parse_checkpoint(b"0\n", LEADER_EPOCH) == []            # no count line: no entries
    assert parse_checkpoint(b"0\r\n1\r\n5 100\r\n", LEADER_EPOCH) == [EpochEntry(5, 100)]
    assert parse_checkpoint(b"0\n1\n5\t\t100  \n", LEADER_EPOCH) == [EpochEntry(5, 100)]
    assert parse_checkpoint(b"0\n1\nt 0 +7", "cleaner-offset-checkpoint") == [OffsetEntry("t", 0, 7)]


@pytest.mark.parametrize("data,kind,line,message", [
    (b"1\n0\n", LEADER_EPOCH, 1,
     "Unrecognised version:1, expected version: 0 in checkpoint file at: /d/leader-epoch-checkpoint"),
    (b"x\n", LEADER_EPOCH, 1, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: x"),
    (b"0\n1\n5 100 7\n", LEADER_EPOCH, 3, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: 5 100 7"),
    (b"0\n1\n 5 100\n", LEADER_EPOCH, 3, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]:  5 100"),
    (b"0\n1\n5 1e3\n", LEADER_EPOCH, 3, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: 5 1e3"),
    (b"0\n1\n2147483648 0\n", LEADER_EPOCH, 3,
     "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: 2147483648 0"),
    (b"0\nzwei\n", LEADER_EPOCH, 2, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: zwei"),
    (b"0\n2\n5 100\n", LEADER_EPOCH, 3,
     "Expected [2] entries in checkpoint file [/d/leader-epoch-checkpoint], but found only [1]"),
    (b"0\n1\n5 100\n6 200\n", LEADER_EPOCH, 4,
     "Expected [1] entries in checkpoint file [/d/leader-epoch-checkpoint], but found only [2]"),
    (b"0\n1\n5 100\n\n", LEADER_EPOCH, 4, "Malformed line in checkpoint file [/d/leader-epoch-checkpoint]: "),
])
def test_checkpoint_errors(data, kind, line, message):
    with pytest.raises(InvalidFileError) as e:
        parse_checkpoint(data, kind, "/d/leader-epoch-checkpoint")
    assert e.value.message == message and e.value.position == line


@pytest.mark.parametrize("line", [b"topic 0", b"topic x 5", b"my topic 0 5", b"t 0 99999999999999999999"])
def test_offset_checkpoint_malformed_lines(line):
    with pytest.raises(InvalidFileError) as e:
        parse_checkpoint(b"0\n1\n" + line + b"\n", "recovery-point-offset-checkpoint", "/l/r")
    assert e.value.message == f"Malformed line in checkpoint file [/l/r]: {line.decode()}"
    assert e.value.position == 3


def test_checkpoint_bad_utf8_and_unknown_kind():
    with pytest.raises(InvalidFileError) as e:
        parse_checkpoint(b"0\n1\ntop\xffic 0 1\n", "log-start-offset-checkpoint")
    assert e.value.position == 3
    with pytest.raises(UnknownFileKindError):
        parse_checkpoint(b"", "offsets")


# -- partition.metadata --------------------------------------------------------------------------

@pytest.mark.parametrize("path", PARTITION_METADATA, ids=_id)
def test_real_partition_metadata(path):
    data = path.read_bytes()
    meta = parse_partition_metadata(data, str(path))
    assert meta["version"] == 0 and len(parse_uuid(meta["topic_id"])) == 16
    assert encode_partition_metadata(meta["topic_id"]) == data


@pytest.mark.parametrize("data,line,message", [
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 2, "Invalid topic ID in partition metadata file (/p)"),
    (b"version: -1\ntopic_id: HfPOZySrSf-LV5ndJNJmew", 1,
     "Unrecognized version of partition metadata file (/p): -1"),
    (b"version:0\ntopic_id: HfPOZySrSf-LV5ndJNJmew", 1, "Malformed line in partition metadata file [/p]: version:0"),
    (b"version: zero\ntopic_id: x", 1, "Malformed line in partition metadata file [/p]: version: zero"),
    (b"version: 0\n", 2, "Malformed line in partition metadata file [/p]: "),
    (b"version: 0", 2, "Malformed line in partition metadata file [/p]: None"),
    (b"", 1, "Malformed line in partition metadata file [/p]: "),
    (b"version: 0\ntopicid: HfPOZySrSf-LV5ndJNJmew", 2,
     "Malformed line in partition metadata file [/p]: topicid: HfPOZySrSf-LV5ndJNJmew"),
    (b"version: 0\ntopic_id: not-a-uuid", 2, "Malformed line in partition metadata file [/p]: topic_id: not-a-uuid"),
    (b"version: 0\ntopic_id: \xff", 0, None),
])
def test_partition_metadata_errors(data, line, message):
    with pytest.raises(InvalidFileError) as e:
        parse_partition_metadata(data, "/p")
    if message is not None:
        assert e.value.message == message
        assert e.value.position == line


@pytest.mark.parametrize("text,error", [
    ("HfPOZySrSf-LV5ndJNJmew", None),
    ("HfPOZySrSf-LV5ndJNJmew==", None),
    ("A" * 25, "Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be decoded as a base64 UUID"),
    ("A" * 23, "Input string `AAAAAAAAAAAAAAAAAAAAAAA` decoded as 17 bytes, which is not equal to the expected "
               "16 bytes of a base64-encoded UUID"),
    ("AAAA", "Input string `AAAA` decoded as 3 bytes, which is not equal to the expected 16 bytes of a "
             "base64-encoded UUID"),
    ("HfPOZySrSf+LV5ndJNJmew", "Illegal base64 character 2b"),
    ("A", "Input string `A` is not valid base64"),
    ("AB=CD", "Input string `AB=CD` is not valid base64"),
    ("HfPOZySrSf-LV5ndJNJmew=", "Input string `HfPOZySrSf-LV5ndJNJmew=` is not valid base64"),
])
def test_uuid(text, error):
    if error is None:
        raw = parse_uuid(text)
        assert len(raw) == 16 and encode_uuid(raw) == text.rstrip("=")
    else:
        with pytest.raises(InvalidFileError) as e:
            parse_uuid(text)
        assert e.value.message == error


# -- meta.properties ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", META_PROPERTIES, ids=_id)
def test_real_meta_properties(path):
    meta = parse_meta_properties(path.read_bytes(), str(path))
    assert meta["version"] in (0, 1)
    if meta["version"] == 0:
        assert isinstance(meta["broker_id"], int)
    else:
        assert isinstance(meta["node_id"], int) and meta["cluster_id"]
    if meta["cluster_id"] is not None:
        assert len(parse_uuid(meta["cluster_id"])) == 16


def test_meta_properties_kraft_fixture():
    path = REAL / "Manny-97__end-to-end-streaming-system/kafka/data/meta.properties"
    meta = parse_meta_properties(path.read_bytes())
    assert {k: v for k, v in meta.items() if k != "properties"} == {
        "version": 1, "node_id": 0, "cluster_id": "keCoVG9RTq2m8AdONql3Ew", "directory_id": "surWMNpmXk5bl_Ry5tk_EA"}


def test_properties_syntax():
    text = (b"# comment\n! also a comment\n   \n  key1 = value one  \nkey2:v2\nkey3 v3\n"
            b"long = first \\\n    second\\\n third\nesc\\=aped\\ key = tab\\there \\u0041\nempty\n"
            b"# not continued \\\nkey4=\xe9\r\nkey1=again")
    props = parse_properties(text)
    assert props == {"key1": "again", "key2": "v2", "key3": "v3", "long": "first secondthird",
                     "esc=aped key": "tab\there A", "empty": "", "key4": "\u00e9"}


@pytest.mark.parametrize("data,message", [
    (b"version=1\ncluster.id=keCoVG9RTq2m8AdONql3Ew\n", "Failed to find node.id"),
    (b"version=1\nnode.id=3\n", "cluster.id was not found."),
    (b"version=2\nnode.id=3\n", "Unknown meta.properties version number 2"),
    (b"version=one\n", "Invalid meta.properties version string 'one'"),
    (b"version=0\nbroker.id=x\n", "Unable to read broker.id as a base-10 number."),
    (b"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=bad\n",
     "Unable to read directory.id as a Uuid: Input string `bad` decoded as 2 bytes, which is not equal to the "
     "expected 16 bytes of a base64-encoded UUID"),
    (b"version=0\nbroker.id=\\u00G1\n", "Malformed \\uxxxx encoding."),
])
def test_meta_properties_errors(data, message):
    with pytest.raises(InvalidFileError) as e:
        parse_meta_properties(data)
    assert e.value.message == message


def test_meta_properties_v0_optional_keys():
    assert parse_meta_properties(b"version=0\n")["broker_id"] is None
    assert parse_meta_properties(b"broker.id=5\n")["broker_id"] == 5     # no version: v0
    assert parse_meta_properties(b"version= 1 \nnode.id=2\ncluster.id=c\n")["node_id"] == 2


# -- quorum-state and .kafka_cleanshutdown ---------------------------------------------------------

def test_real_quorum_state():
    (path,) = _real("quorum-state")
    state = parse_quorum_state(path.read_bytes())
    assert state["leaderId"] == 0 and state["leaderEpoch"] == 7 and state["data_version"] == 0


@pytest.mark.parametrize("data", [b"", b"{", b"[1]", b"\xff", b"{\"a\":" * 100000])
def test_quorum_state_errors(data):
    with pytest.raises(InvalidFileError):
        parse_quorum_state(data)


@pytest.mark.parametrize("path", _real(".kafka_cleanshutdown"), ids=_id)
def test_real_clean_shutdown(path):
    data = path.read_bytes()
    out = parse_clean_shutdown(data)
    if data:
        assert out == {"version": 0, "broker_epoch": 57472} and encode_clean_shutdown(57472) == data
    else:       # pre-KIP-966 brokers leave the file empty: still a clean shutdown
        assert out == {"version": None, "broker_epoch": None}


def test_clean_shutdown_variants_and_errors():
    assert parse_clean_shutdown(b'{"version":"0","broker_epoch":"12"}') == {"version": 0, "broker_epoch": 12}
    assert parse_clean_shutdown(b"{}") == {"version": None, "broker_epoch": None}
    for bad in (b"{", b"[0]", b'{"version":0,"brokerEpoch":"x"}', b'{"version":true}', b"\xfe\xff"):
        with pytest.raises(InvalidFileError):
            parse_clean_shutdown(bad)


# -- fuzz: damaged real files raise only kdump errors ------------------------------------------------

def _mutations(data: bytes, rng: random.Random, n: int):
    for _ in range(n):
        buf = bytearray(data[:rng.randrange(len(data) + 1)])
        for _ in range(rng.randrange(4)):
            if buf:
                op = rng.randrange(3)
                at = rng.randrange(len(buf))
                if op == 0:
                    buf[at] = rng.randrange(256)
                elif op == 1:
                    buf.insert(at, rng.choice(b" \n\r\t=:#\\-0123456789{}\"\xff"))
                else:
                    del buf[at]
        yield bytes(buf)


def test_mutated_side_files_raise_only_kdump_errors():
    rng = random.Random(2024)
    cases = [(p, lambda d: parse_snapshot(d)) for p in SNAPSHOTS[:15]]
    cases += [(p, lambda d, k=p.name: parse_checkpoint(d, k)) for p in CHECKPOINTS[::20]]
    cases += [(p, parse_partition_metadata) for p in PARTITION_METADATA[:10]]
    cases += [(p, parse_meta_properties) for p in META_PROPERTIES]
    cases += [(p, parse_quorum_state) for p in _real("quorum-state")]
    cases += [(p, parse_clean_shutdown) for p in _real(".kafka_cleanshutdown")]
    tried = 0
    for path, parse in cases:
        for data in _mutations(path.read_bytes(), rng, 40):
            tried += 1
            try:
                parse(data)
            except KdumpError as e:
                assert e.message
    assert tried > 1000


def test_a_checkpoint_line_reads_the_same_on_the_broker_path_and_the_general_one():
    """A broker's "topic partition offset" line takes a short way past Java's number rules; a
    trailing space (dropped by Java's split) sends the same line the general way: both must
    agree, on lines a broker writes and on lines just beside them."""
    from kdump.format.checkpoint import LOG_START_OFFSET_CHECKPOINT, _parse_entry

    rnd = random.Random(41)
    pieces = ["t", "topic-a.b_c", "x\ty", "\x0b", "", "0", "7", "007", "+5", "-1", "١٢", "²", "2147483647",
              "2147483648", "999999999", "9223372036854775807", "9223372036854775808", "123456789012345678",
              "1234567890123456789", "\u00a0", "é"]
    for _ in range(3000):
        line = " ".join(rnd.choice(pieces) for _ in range(rnd.choice([2, 3, 3, 3, 4])))
        kind = LOG_START_OFFSET_CHECKPOINT
        assert _parse_entry(line, kind) == _parse_entry(line + " ", kind), line
    assert _parse_entry("t 3 42", LOG_START_OFFSET_CHECKPOINT) == (("t", 3, 42))
    assert _parse_entry("x\ty 3 42", LOG_START_OFFSET_CHECKPOINT) is None      # Java's \s splits at the tab
