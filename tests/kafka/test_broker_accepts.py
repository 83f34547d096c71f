"""Two odd states a real Kafka broker starts on without complaint, hence anomalies for verify.

A copy of the real-broker fixture `fixtures/broker/all-shapes` gets, in one partition each:

- `records-0`: its `.log` removed, leaving `.index`, `.timeindex` and the producer `.snapshot`
  (what `fixtures/real/Manny-97__end-to-end-streaming-system` holds: the source repository
  never published `*.log`), with a log start offset checkpointed above 0;
- `compacted-purged-0`: its first segment, whose batches skip offsets 60..116 (the cleaner
  removed them), gets an `.index` entry naming offset 100 at the position of the batch before
  the gap (an append indexed at its first batch with its last offset, whose last batch
  compaction removed later).

A broker starts on the copy after a clean shutdown (the cleaner off, so that nothing it does
rewrites the segment under test), serves reads, and stops cleanly:

- `log_missing`: the broker loads the partition, deletes the indexes as orphans and every
  producer snapshot, and starts it empty at its log start offset, where it makes an empty
  segment. What the files described is gone either way: an anomaly, not a broker failure.
- `index_offset_gap`: the broker loads the segment without rebuilding its index (the file is
  byte-identical after the run, no corruption logged), and a fetch at the gap's offset lands
  on the next batch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import kafka_jars
import pytest
from broker import KafkaBroker

from support.run import run_kdump

pytestmark = pytest.mark.slow

ALL_SHAPES = Path(__file__).resolve().parents[2] / "fixtures" / "broker" / "all-shapes"
LOGLESS, GAP = "records-0", "compacted-purged-0"
LOG_START = 4           # records-0 held offsets 0..10
GAP_OFFSET = 100        # compacted-purged-0/00000000000000000000.log: batches 57..59, then 117..119
GAP_INDEX = GAP_OFFSET.to_bytes(4, "big") + (0).to_bytes(4, "big")    # relative offset 100, position 0


def _set_log_start(logdir: Path, topic: str, partition: int, offset: int) -> None:
    path = logdir / "log-start-offset-checkpoint"
    lines = [ln for ln in path.read_text().split("\n")[2:] if ln.strip() and not ln.startswith(f"{topic} ")]
    lines.append(f"{topic} {partition} {offset}")
    path.write_text("\n".join(["0", str(len(lines)), *lines]) + "\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    kafka_jars.ensure_jars()
    root = tmp_path_factory.mktemp("broker-accepts")
    before = root / "before"
    shutil.copytree(ALL_SHAPES, before)
    for log in (before / LOGLESS).glob("*.log"):
        log.unlink()
    _set_log_start(before, "records", 0, LOG_START)
    (before / GAP / "00000000000000000000.index").write_bytes(GAP_INDEX)
    after = root / "after"
    shutil.copytree(before, after)
    broker = KafkaBroker(after, work_dir=root / "work",
                         config={"log.cleaner.enable": "false", "log.retention.ms": "-1"})
    try:
        broker.start()
        fetched = {LOGLESS: _fetch(broker.bootstrap, "records", 0), GAP: _fetch(broker.bootstrap, "compacted-purged",
                                                                               GAP_OFFSET)}
        broker.stop()
    finally:
        broker.kill()
    return before, after, fetched, broker.log_file.read_text(errors="replace")


def _fetch(bootstrap: str, topic: str, offset: int) -> tuple[int, int, list[int]]:
    """(log start offset, log end offset, offsets read from ``offset`` on) as a consumer sees them."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        consumer.assign([tp])
        start, end = consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
        offsets = []
        if offset < end:
            consumer.seek(tp, offset)
            offsets = [r.offset for r in consumer]
        return start, end, offsets
    finally:
        consumer.close()


def test_a_partition_without_its_log_starts_empty_at_its_log_start_offset(run):
    before, after, fetched, log = run
    assert f"Found an orphaned index file {after / LOGLESS / '00000000000000000000.index'}" in log
    assert sorted(p.name for p in (after / LOGLESS).iterdir()) == [
        f"{LOG_START:020d}.index", f"{LOG_START:020d}.log", f"{LOG_START:020d}.timeindex",
        "leader-epoch-checkpoint", "partition.metadata"]
    assert (after / LOGLESS / f"{LOG_START:020d}.log").stat().st_size == 0
    assert fetched[LOGLESS] == (LOG_START, LOG_START, [])


def test_verify_calls_a_partition_without_its_log_an_anomaly(run):
    # The broker loads it (log_missing: an anomaly), but the records its snapshot and indexes
    # show are gone (records_missing: damage, exit 1).
    before = run[0]
    d = before / LOGLESS
    r = run_kdump("verify", "--json", d)
    assert r.code == 1, r.err
    found = [(f["kind"], f["class"], f["offset"]) for line in r.out.splitlines()
             for f in json.loads(line)["findings"] if f["kind"] in ("log_missing", "records_missing")]
    assert found == [("log_missing", "anomaly", None), ("records_missing", "damage", 0)]


def test_recover_leaves_a_logless_partition_as_the_broker_does(run, tmp_path):
    # The broker's start made an empty segment at the log start offset and deleted the
    # orphan indexes and the producer snapshot: recover --apply leaves the same files.
    before, after = run[0], run[1]
    d = tmp_path / LOGLESS
    shutil.copytree(before / LOGLESS, d)
    shutil.copy(before / "log-start-offset-checkpoint", tmp_path)
    r = run_kdump("recover", "--apply", "--yes", d)
    assert r.code == 0, r.err
    kept = sorted(p.name for p in d.iterdir() if p.is_file())
    assert kept == sorted(p.name for p in (after / LOGLESS).iterdir() if p.suffix not in (".index", ".timeindex"))
    assert (d / f"{LOG_START:020d}.log").stat().st_size == 0


def test_an_index_entry_in_a_compaction_gap_loads_as_it_is(run):
    before, after, fetched, log = run
    index = after / GAP / "00000000000000000000.index"
    assert index.read_bytes() == GAP_INDEX
    mine = [ln for ln in log.splitlines() if f"partition={GAP}," in ln or f"/{GAP}/" in ln]
    assert mine and not [ln for ln in mine if "corrupted index" in ln or "Recovering" in ln or "WARN" in ln]
    assert f"Completed load of Log(dir={after / GAP}," in log
    # A fetch at the gap's offset reads every record from there on (the segment's two batches
    # are ones the cleaner emptied; the records start in the next segment), none skipped.
    expected = [o for o in _record_offsets(before / GAP) if o >= GAP_OFFSET]
    assert expected and fetched[GAP][2] == expected


def _record_offsets(partition: Path) -> list[int]:
    from kdump.format.walk import Walker, decode_records

    out = []
    for log in sorted(partition.glob("*.log")):
        data = log.read_bytes()
        out += [r.offset for b in Walker(data) if not b.is_control for r in decode_records(data, b)]
    return out


def test_verify_calls_an_index_entry_in_a_compaction_gap_an_anomaly(run):
    before = run[0]
    r = run_kdump("verify", "--json", before / GAP / "00000000000000000000.index")
    assert r.code == 0, r.err
    [obj] = [json.loads(line) for line in r.out.splitlines()]
    assert [(f["kind"], f["class"], f["offset"]) for f in obj["findings"]] == [("index_offset_gap", "anomaly", 100)]
    assert run_kdump("verify", "--strict", before / GAP).code == 1
