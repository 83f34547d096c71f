"""Tiered storage (KIP-405) against a real broker: LocalTieredStorage as its RSM, the
topic-based metadata manager. The broker offloads rolled segments and deletes them locally;
a consumer reading from offset 0 through the broker (which fetches the remote data) is the
oracle for kdump's records of remote plus local. Then copies of the remote store are damaged
and each finding checked."""

from __future__ import annotations

import base64
import json
import shutil
import time

import kafka_jars
import pytest
from broker import tiered_config

from support.run import run_kdump

pytestmark = pytest.mark.slow

TOPIC = "tiered"
SEGMENT_RECORDS = 6000


def _wait(what, until, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.5)


def _consume(bootstrap: str) -> list[tuple[int, bytes | None, bytes | None]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                      consumer_timeout_ms=8000)
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [(m.offset, m.key, m.value) for m in c]
    c.close()
    return got


def _remote_logs(remote):
    return sorted((remote / "kafka-tiered-storage").glob(f"{TOPIC}-0-*/*.log"))


@pytest.fixture(scope="module")
def tiered(tmp_path_factory):
    """(log dir, remote dir, consumed records) after a run that offloaded and deleted locally."""
    from broker_fixtures import BrokerFactory
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    kafka_jars.ensure_jars()
    tmp = tmp_path_factory.mktemp("tiered")
    remote, logs = tmp / "remote", tmp / "logs"
    factory = BrokerFactory(tmp)
    try:
        broker = factory(logs, classpath=kafka_jars.classpath_4_3_1(), **tiered_config(remote))
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        # A segment rolls when its 1 KB offset index is full: ~128 batches of ~1 KB.
        admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs={
            "remote.storage.enable": "true", "segment.index.bytes": "1024", "local.retention.bytes": "150000",
            "retention.ms": "-1", "file.delete.delay.ms": "1000"})])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5, batch_size=1024)
        for i in range(SEGMENT_RECORDS):
            producer.send(TOPIC, key=b"k%d" % i, value=b"value %d " % i + b"x" * 150, partition=0)
        producer.flush()
        part = logs / f"{TOPIC}-0"
        _wait("segments offloaded and deleted locally",
              lambda: len(_remote_logs(remote)) >= 8 and len(list(part.glob("*.log"))) <= 3)
        for i in range(40):            # the tail only the local log holds
            producer.send(TOPIC, key=b"t%d" % i, value=b"tail %d" % i, partition=0)
        producer.flush()
        producer.close()
        consumed = _consume(broker.bootstrap)
        broker.stop()
        shutil.copytree(logs, tmp / "deleting" / "logs")
        shutil.copytree(remote, tmp / "deleting" / "remote")
        yield logs, remote, consumed
    finally:
        factory.close()


@pytest.fixture(scope="module")
def remote_deleted(tiered, tmp_path_factory):
    """A copy of the broker run again with a remote retention that deletes its oldest remote
    segments (DELETE_SEGMENT_STARTED, then _FINISHED)."""
    from broker_fixtures import BrokerFactory
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    from kdump.state.remote_log import replay

    logs, remote, _ = tiered
    base = logs.parent / "deleting"
    factory = BrokerFactory(tmp_path_factory.mktemp("deleting-work"))
    try:
        broker = factory(base / "logs", classpath=kafka_jars.classpath_4_3_1(),
                         **tiered_config(base / "remote"))
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={   # the whole set
            "remote.storage.enable": "true", "segment.index.bytes": "1024", "local.retention.bytes": "150000",
            "retention.ms": "-1", "file.delete.delay.ms": "1000", "retention.bytes": "700000"})])
        admin.close()

        def deleted():
            metas = replay([str(base / "logs")]).segments.get((TOPIC, 0), {})
            return sum(m.state == 3 for m in metas.values()) >= 2
        _wait("remote segments deleted", deleted)
        broker.stop()
        yield base / "logs", base / "remote"
    finally:
        factory.close()


def test_remote_retention(remote_deleted, tmp_path):
    logs, remote = remote_deleted
    r = run_kdump("verify", str(logs), "--remote-storage", str(remote), "--json")
    assert r.code == 0, r.out + r.err
    rows = _rows(str(logs / f"{TOPIC}-0"), "--remote-storage", str(remote))
    offsets = [o for o, _, _ in rows]
    assert offsets == list(range(offsets[0], SEGMENT_RECORDS + 40)) and offsets[0] > 0
    # the metadata cut before the batch of a DELETE_SEGMENT_FINISHED whose DELETE_SEGMENT_STARTED
    # lies in an earlier batch (the broker may write both in one batch, and may have started
    # more deletes before it stopped): the latest such cut that leaves a delete unfinished
    from kdump.state.remote_log import replay

    meta = tmp_path / "meta" / "__remote_log_metadata-0"
    full = replay([str(logs)]).segments[(TOPIC, 0)]
    finished = sorted((m.metadata_offset for m in full.values() if m.state == 3), reverse=True)
    for offset in finished:
        shutil.rmtree(meta, ignore_errors=True)
        shutil.copytree(logs / "__remote_log_metadata-0", meta)
        batch = next(b for b in map(json.loads, run_kdump("dump", str(meta), "--json").out.splitlines())
                     if b["base_offset"] <= offset <= b["last_offset"])
        with open(batch["file"], "r+b") as fh:
            fh.truncate(batch["position"])
        cut = replay([str(meta.parent)]).segments[(TOPIC, 0)]
        if any(m.state == 2 for m in cut.values()):
            break
    else:
        pytest.fail("every DELETE_SEGMENT_FINISHED shares its batch with its DELETE_SEGMENT_STARTED")
    # (a delete the broker started after the cut shows that segment live with its files gone:
    # remote_segment_missing, rightly, and then exit 1)
    started_later = any(full[i].state in (2, 3) and m.state not in (2, 3) for i, m in cut.items() if i in full)
    r = run_kdump("verify", str(logs), "--remote-storage", str(remote), "--remote-metadata", str(meta.parent),
                  "--json")
    kinds = [json.loads(line)["kind"] for line in r.out.splitlines() if '"topic"' in line]
    assert "remote_delete_unfinished" in kinds
    assert set(kinds) <= {"remote_delete_unfinished"} | ({"remote_segment_missing"} if started_later else set()), kinds
    assert r.code == (1 if "remote_segment_missing" in kinds else 0), r.out


def _rows(*args):
    r = run_kdump("dump", *args, "--records", "--data", "--json", "--encoding", "base64")
    assert r.code == 0, r.err
    b = base64.b64decode
    return [(rec["offset"], None if rec["key"] is None else b(rec["key"]), None if rec["value"] is None
             else b(rec["value"])) for batch in map(json.loads, r.out.splitlines()) if f"/{TOPIC}-" in batch["file"]
            for rec in batch.get("records", ())]


def test_whole_log_is_what_a_consumer_reads(tiered):
    logs, remote, consumed = tiered
    assert len(consumed) == SEGMENT_RECORDS + 40
    local_only = _rows(str(logs / f"{TOPIC}-0"))
    assert local_only and local_only[0][0] >= 5000          # the broker kept only the tail
    assert local_only[-1] == consumed[-1]
    # the configured dir and its kafka-tiered-storage folder are both accepted
    assert _rows(str(logs / f"{TOPIC}-0"), "--remote-storage", str(remote)) == consumed
    assert _rows(str(logs), "--remote-storage", str(remote / "kafka-tiered-storage")) == consumed
    r = run_kdump("verify", str(logs), "--remote-storage", str(remote))
    assert r.code == 0, r.out + r.err
    assert "0 tiered problems" in r.err
    r = run_kdump("info", str(logs), "--remote-storage", str(remote))
    assert r.code == 0
    tiers = [line.split()[1] for line in r.out.splitlines()]
    below = [p for p in _remote_logs(remote) if _starts(p) < _local_bases(logs / f"{TOPIC}-0")[0]]
    assert tiers[0] == "remote" and tiers[-1] == "local" and tiers.count("remote") == len(below)


def _damaged(tiered, tmp_path, damage):
    logs, remote, _ = tiered
    copy = tmp_path / "remote"
    shutil.copytree(remote, copy)
    damage(_remote_logs(copy))
    r = run_kdump("verify", str(logs), "--remote-storage", str(copy), "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    return r, found


def _starts(path):
    return int(path.name.split("-")[0])


def test_deleted_segment(tiered, tmp_path):
    segs = []
    r, found = _damaged(tiered, tmp_path, lambda logs: (segs.append(logs[1]), logs[1].unlink()))
    assert r.code == 1
    (f,) = [f for f in found if f["kind"] == "remote_segment_missing"]
    nxt = _starts(_remote_logs(tiered[1])[2])
    assert f["offset"] == _starts(segs[0]) and f"offsets {_starts(segs[0])}..{nxt - 1}" in f["message"]
    assert f["class"] == "damage"


def test_short_segment(tiered, tmp_path):
    def cut(logs):
        with open(logs[2], "r+b") as fh:
            fh.truncate(1000)
    r, found = _damaged(tiered, tmp_path, cut)
    assert r.code == 1
    assert [f["kind"] for f in found if f["class"] == "damage"] == ["remote_segment_short"]


def test_flipped_byte(tiered, tmp_path):
    def flip(logs):
        with open(logs[3], "r+b") as fh:
            fh.seek(300)
            b = fh.read(1)
            fh.seek(300)
            fh.write(bytes([b[0] ^ 0xFF]))
    r, found = _damaged(tiered, tmp_path, flip)
    assert r.code == 1
    (f,) = [f for f in found if f["class"] == "damage"]
    assert f["kind"] == "remote_segment_corrupt" and "fails its CRC check" in f["message"]


def test_orphan(tiered, tmp_path):
    def orphan(logs):
        shutil.copy(logs[0], logs[0].parent / "00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.log")
        gone = logs[0].parent.parent / "gone-0-BBBBBBBBBBBBBBBBBBBBBB"     # a partition no metadata knows
        gone.mkdir()
        shutil.copy(logs[0], gone / logs[0].name)
    r, found = _damaged(tiered, tmp_path, orphan)
    assert r.code == 0
    assert sorted(f["file"].rsplit("/", 2)[-2:] for f in found if f["kind"] == "remote_orphan") == [
        ["gone-0-BBBBBBBBBBBBBBBBBBBBBB", _remote_logs(tiered[1])[0].name],
        [_remote_logs(tiered[1])[0].parent.name, "00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.log"]]


def test_copy_never_finished(tiered, tmp_path):
    """The metadata cut before the last COPY_SEGMENT_FINISHED: that upload never finished."""
    logs, remote, _ = tiered
    meta = tmp_path / "meta" / "__remote_log_metadata-0"
    shutil.copytree(logs / "__remote_log_metadata-0", meta)
    r = run_kdump("dump", str(meta), "--json")
    last = json.loads(r.out.splitlines()[-1])
    with open(last["file"].replace(str(logs / "__remote_log_metadata-0"), str(meta)), "r+b") as fh:
        fh.truncate(last["position"])
    r = run_kdump("verify", str(logs), "--remote-storage", str(remote), "--remote-metadata", str(meta.parent),
                  "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    kinds = {f["kind"] for f in found}
    assert "remote_copy_unfinished" in kinds
    # its offsets are still in the local segment it was copied from: no gap, nothing lost
    assert "remote_gap" not in kinds and r.code == 0
    assert _rows(str(logs / f"{TOPIC}-0"), "--remote-storage", str(remote), "--remote-metadata",
                 str(meta.parent)) == tiered[2]


def _exported(out):
    """(offset, key, value) of the tiered partition's rows in an export's Parquet, in offset order."""
    import pyarrow.dataset as ds

    t = ds.dataset(str(out / f"topic={TOPIC}" / "partition=0"), format="parquet").to_table()
    rows = sorted(zip(t.column("offset").to_pylist(), t.column("key").to_pylist(), t.column("value").to_pylist(),
                      t.column("segment").to_pylist()))
    return [r[:3] for r in rows], {r[3] for r in rows}


def _local_bases(part):
    return sorted(int(p.name[:20]) for p in part.glob("*.log"))


@pytest.fixture(scope="module")
def overlapped(tiered, tmp_path_factory):
    """The broker's log dir with a local log that starts inside a remote segment, as on a
    replica that rolled its segments elsewhere: the batches of the second-last remote segment
    below the broker's local log start offset from its middle batch on, and the last one, make
    one local segment. (log dir, that segment's base, the cut remote segment, the remote
    segments below it)."""
    logs, remote, _ = tiered
    copy = tmp_path_factory.mktemp("overlapped") / "logs"
    shutil.copytree(logs, copy)
    part = copy / f"{TOPIC}-0"
    below = [p for p in _remote_logs(remote) if _starts(p) < _local_bases(part)[0]]
    mid, last = below[-2], below[-1]
    batches = [json.loads(line) for line in run_kdump("dump", str(mid), "--json").out.splitlines()]
    b = batches[len(batches) // 2]
    (part / f"{b['base_offset']:020d}.log").write_bytes(mid.read_bytes()[b["position"]:] + last.read_bytes())
    return copy, b["base_offset"], mid, below[:-2]


def test_overlap_each_offset_once(tiered, overlapped):
    """Local and remote segments holding the same offsets (the local log start offset inside
    a remote segment, and remote segments the local log holds whole): dump and info give
    each offset once, from the local log at and above its start offset as a fetch does
    (ReplicaManager), from the remote segment below it; verify checks both copies."""
    _, remote, consumed = tiered
    logs, llso, cut, whole = overlapped
    part = logs / f"{TOPIC}-0"
    assert _rows(str(part), "--remote-storage", str(remote)) == consumed
    r = run_kdump("info", str(logs), "--remote-storage", str(remote), "--json")
    assert r.code == 0, r.err
    rows = [(s["tier"], s["base_offset"], s["end_offset"], s["file"]) for s in map(json.loads, r.out.splitlines())]
    local = _local_bases(part)
    assert rows == ([("remote", _starts(p), _starts(q) - 1, str(p)) for p, q in zip(whole, whole[1:] + [cut])]
                    + [("remote", _starts(cut), llso - 1, str(cut))]
                    + [("local", a, b - 1, str(part / f"{a:020d}.log")) for a, b in zip(local, local[1:])]
                    + [("local", local[-1], None, str(part / f"{local[-1]:020d}.log"))])
    from kdump.state.remote_log import replay

    remote_end = max(m.end_offset for m in replay([str(logs)]).segments[(TOPIC, 0)].values() if m.live)
    r = run_kdump("info", str(logs), "--remote-storage", str(remote))
    assert r.err == f"kdump: {TOPIC}-0: (offsets {llso}..{remote_end} in both: read from the local log)\n"
    r = run_kdump("verify", str(logs), "--remote-storage", str(remote), "--json")
    assert r.code == 0, r.out + r.err
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert [(f["kind"], f["file"], f["offset"]) for f in found] == [
        ("remote_overlap", str(part / f"{llso:020d}.log"), llso)]
    assert found[0]["message"].startswith(f"local segment from offset {llso} runs past remote segment "
                                          f"{cut.name[21:43]} (offsets {_starts(cut)}..")

    # a byte flipped in a remote segment the local log holds whole: verify names it, and the
    # records are still the consumer's (they are read from the local copy)
    copy = logs.parent / "remote"
    shutil.copytree(remote, copy)
    held = next(p for p in _remote_logs(copy) if _starts(p) > _starts(cut))
    with open(held, "r+b") as fh:
        fh.seek(300)
        b = fh.read(1)
        fh.seek(300)
        fh.write(bytes([b[0] ^ 0xFF]))
    r = run_kdump("verify", str(logs), "--remote-storage", str(copy), "--json")
    assert r.code == 1
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert [(f["kind"], f["file"]) for f in found if f["class"] == "damage"] == [("remote_segment_corrupt", str(held))]
    assert _rows(str(part), "--remote-storage", str(copy)) == consumed


def test_export_is_the_whole_log(tiered, overlapped, tmp_path):
    """Both engines export remote plus local, each offset once, as the consumer read it; the
    remote rows name the remote segment they came from. Where the tiers overlap (the local
    log from inside a remote segment), the rows below the local log start offset come from
    the remote store, the rest from the local log."""
    pytest.importorskip("pyarrow")
    logs, remote, consumed = tiered
    r = run_kdump("export", str(logs), "--remote-storage", str(remote), "--out", str(tmp_path / "local"))
    assert r.code == 0, r.err
    rows, segments = _exported(tmp_path / "local")
    assert rows == consumed
    local_start = _local_bases(logs / f"{TOPIC}-0")[0]
    assert {p.name for p in _remote_logs(remote) if _starts(p) < local_start} <= segments
    over, llso, cut, whole = overlapped
    r = run_kdump("export", str(over), "--remote-storage", str(remote), "--out", str(tmp_path / "over"),
                  "--split-bytes", "65536")
    assert r.code == 0, r.err
    over_rows, over_segments = _exported(tmp_path / "over")
    assert over_rows == consumed
    assert over_segments == {p.name for p in whole + [cut]} | {p.name for p in (over / f"{TOPIC}-0").glob("*.log")}
    # without --remote-storage only the local tail is there
    r = run_kdump("export", str(logs / f"{TOPIC}-0"), "--out", str(tmp_path / "tail"))
    assert r.code == 0 and _exported(tmp_path / "tail")[0] == consumed[-len(_exported(tmp_path / "tail")[0]):]
    pytest.importorskip("pyspark")
    import os
    import subprocess
    import sys

    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "kdump", "export", str(over), "--remote-storage", str(remote),
                           "--out", str(tmp_path / "spark"), "--engine", "spark", "--master", "local[2]",
                           "--split-bytes", "65536", "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1"],
                          env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _exported(tmp_path / "spark") == (over_rows, over_segments)


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """moto's S3 server on loopback (tests/remote/servers.py)."""
    pytest.importorskip("moto", reason="moto[server] is in the test extra")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
    from servers import S3Server

    server = S3Server(tmp_path_factory.mktemp("moto") / "moto.log").start()
    yield server
    server.stop()


def test_remote_store_on_s3(tiered, s3_server, monkeypatch, tmp_path):
    """The LocalTieredStorage tree uploaded under an S3 prefix is the same store: the same
    records, the same findings (a deleted segment, named by its s3:// URL)."""
    logs, remote, consumed = tiered
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    url = s3_server.upload("tiered", remote, "rsm")
    assert _rows(str(logs / f"{TOPIC}-0"), "--remote-storage", url) == consumed
    assert _rows(str(logs / f"{TOPIC}-0"), "--remote-storage", url + "/kafka-tiered-storage/") == consumed
    r = run_kdump("export", str(logs), "--remote-storage", url, "--out", str(tmp_path / "o"))
    assert r.code == 0, r.err
    assert _exported(tmp_path / "o")[0] == consumed
    gone = _remote_logs(remote)[1]
    key = f"rsm/{gone.relative_to(remote).as_posix()}"
    s3_server.client().delete_object(Bucket="tiered", Key=key)
    r = run_kdump("verify", str(logs), "--remote-storage", url, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 1
    assert [(f["kind"], f["file"]) for f in found if f["class"] == "damage"] == [
        ("remote_segment_missing", f"s3://tiered/{key}")]


def test_aiven_layout_on_s3(tiered, s3_server, monkeypatch, tmp_path):
    """The broker's remote segments in Aiven's layout (built per its documented format: no
    real Aiven writer runs here), under a key prefix on S3: plain with a fixed chunk index,
    zstd chunks with a variable one, and zstd plus AES-GCM with an RSA-wrapped key. Each
    gives the consumer's records; a chunk whose tag fails, and a cut object, are named."""
    pytest.importorskip("cryptography")
    from support.aiven import from_local_tiered, rsa_key

    logs, remote, consumed = tiered
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    key, ring = rsa_key(tmp_path)
    src = remote / "kafka-tiered-storage"
    for name, kwargs in (("plain", {}), ("zstd", {"compression": True}), ("enc", {"compression": True, "key": key})):
        from_local_tiered(src, tmp_path / name / "tiered-storage", **kwargs)
    url = {name: s3_server.upload("aiven", tmp_path / name, name) + "/tiered-storage/" for name in ("plain", "zstd",
                                                                                                   "enc")}
    aiven = ("--remote-layout", "aiven")
    part = str(logs / f"{TOPIC}-0")
    assert _rows(part, "--remote-storage", url["plain"], *aiven) == consumed
    assert _rows(part, "--remote-storage", url["zstd"], *aiven) == consumed
    keyed = ("--remote-keyring", str(ring))
    assert _rows(part, "--remote-storage", url["enc"], *aiven, *keyed) == consumed
    r = run_kdump("export", str(logs), "--remote-storage", url["enc"], *aiven, *keyed, "--out", str(tmp_path / "o"))
    assert r.code == 0, r.err
    assert _exported(tmp_path / "o")[0] == consumed
    r = run_kdump("dump", part, "--remote-storage", url["enc"], *aiven)
    assert r.code == 2 and "--remote-keyring FILE" in r.err
    # a flipped byte inside the encrypted segment's first chunk; the zstd one cut short
    s3 = s3_server.client()
    logs_keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="aiven", Prefix="enc/")["Contents"]
                       if o["Key"].endswith(".log"))
    body = bytearray(s3.get_object(Bucket="aiven", Key=logs_keys[0])["Body"].read())
    body[100] ^= 0xFF
    s3.put_object(Bucket="aiven", Key=logs_keys[0], Body=bytes(body))
    r = run_kdump("verify", str(logs), "--remote-storage", url["enc"], *aiven, *keyed, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 1
    assert [(f["kind"], f["file"]) for f in found if f["class"] == "damage"] == [
        ("remote_segment_corrupt", f"s3://aiven/{logs_keys[0]}")]
    assert "fails its AES-GCM tag check" in found[0]["message"]
    cut = logs_keys[1].replace("enc/", "zstd/")
    s3.put_object(Bucket="aiven", Key=cut, Body=s3.get_object(Bucket="aiven", Key=cut)["Body"].read()[:500])
    r = run_kdump("verify", str(logs), "--remote-storage", url["zstd"], *aiven, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 1
    assert [(f["kind"], f["file"]) for f in found if f["class"] == "damage"] == [
        ("remote_segment_corrupt", f"s3://aiven/{cut}")]
    assert "its manifest's chunks take" in found[0]["message"]


def _indexes_piece(s3, key: str, name: str) -> tuple[int, int]:
    """(position, size) of one index in a segment's .indexes object, as its manifest says."""
    manifest = json.loads(s3.get_object(Bucket="aiven", Key=key.replace(".indexes", ".rsm-manifest"))["Body"].read())
    piece = manifest["segmentIndexes"][name]
    return piece["position"], piece["size"]


def test_aiven_indexes_checked_as_side_files(tiered, s3_server, monkeypatch, tmp_path):
    """The .indexes object's pieces (offset, time, producer-snapshot, leader-epoch and
    transaction indexes, where the manifest places them) get verify's own side-file checks:
    a clean upload has no finding; an offset index entry past the log is index_past_end on
    the piece (plain objects), an encrypted piece whose tag fails is unreadable (exit 3)."""
    pytest.importorskip("cryptography")
    from support.aiven import from_local_tiered, rsa_key

    logs, remote, _ = tiered
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    key, ring = rsa_key(tmp_path)
    src = remote / "kafka-tiered-storage"
    from_local_tiered(src, tmp_path / "plain" / "tiered-storage")
    from_local_tiered(src, tmp_path / "enc" / "tiered-storage", compression=True, key=key)
    url = {name: s3_server.upload("aiven", tmp_path / name, f"ix-{name}") + "/tiered-storage/" for name in ("plain",
                                                                                                        "enc")}
    aiven, keyed = ("--remote-layout", "aiven"), ("--remote-keyring", str(ring))
    for name, extra in (("plain", ()), ("enc", keyed)):
        r = run_kdump("verify", str(logs), "--remote-storage", url[name], *aiven, *extra, "--json")
        assert r.code == 0, r.out + r.err
        assert [line for line in r.out.splitlines() if '"topic"' in line] == []
    s3 = s3_server.client()

    def indexes(name):
        return sorted(o["Key"] for o in s3.list_objects_v2(Bucket="aiven", Prefix=f"ix-{name}/")["Contents"]
                      if o["Key"].endswith(".indexes"))
    plain = indexes("plain")[1]
    position, size = _indexes_piece(s3, plain, "offset")
    assert size >= 16
    body = bytearray(s3.get_object(Bucket="aiven", Key=plain)["Body"].read())
    body[position + 4:position + 8] = (10 ** 9).to_bytes(4, "big")    # slot 0's position, far past the log
    s3.put_object(Bucket="aiven", Key=plain, Body=bytes(body))
    r = run_kdump("verify", str(logs), "--remote-storage", url["plain"], *aiven, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 1
    assert {(f["kind"], f["file"]) for f in found if f["class"] == "damage"} == {
        ("index_past_end", f"s3://aiven/{plain}[offset]"), ("index_not_increasing", f"s3://aiven/{plain}[offset]")}
    enc = indexes("enc")[2]
    position, size = _indexes_piece(s3, enc, "leaderEpoch")
    body = bytearray(s3.get_object(Bucket="aiven", Key=enc)["Body"].read())
    body[position + size - 1] ^= 0xFF          # in the piece's AES-GCM tag
    s3.put_object(Bucket="aiven", Key=enc, Body=bytes(body))
    r = run_kdump("verify", str(logs), "--remote-storage", url["enc"], *aiven, *keyed, "--json")
    found = [json.loads(line) for line in r.out.splitlines() if '"topic"' in line]
    assert r.code == 3
    assert [(f["kind"], f["file"], f["message"]) for f in found] == [
        ("unreadable", f"s3://aiven/{enc}[leaderEpoch]", f"the piece at byte {position} fails its AES-GCM tag check")]
