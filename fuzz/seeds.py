"""Build the seed corpora of the fuzz harnesses from ``fixtures/``.

``python fuzz/seeds.py [--out fuzz/corpus]`` writes ``<out>/<target>/seed-<sha1>`` files:
small slices of the fixture files, already in each harness's input layout, so the
fuzzers start from real Kafka bytes. Seeds are capped in size and number: the corpus
directories are git-ignored and rebuilt on demand by ``run.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import struct
import sys
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402,F401 - sets sys.path for a checkout

from kdump.encode import EMPTY_RECORD, build_legacy_count_bomb, build_record_count_bomb  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format import legacy  # noqa: E402
from kdump.format.records import batch_payload  # noqa: E402
from kdump.format.walk import Walker, decode_records  # noqa: E402
from kdump.storage import logdir  # noqa: E402

ROOT = _common.ROOT
FIXTURES = os.path.join(ROOT, "fixtures")
MAX_SEED = 16 << 10          # bytes per seed: small inputs mutate and run faster
MAX_SEEDS = 600              # per target
CLI_SEEDS = 40               # per target that runs a whole command (text, ndjson, scan, info) on each
TARGETS = ("walker", "records", "codecs", "sidefiles", "decoders", "schemas", "text", "ndjson", "scan", "info",
           "avro", "indexes")


def fixture_files() -> Iterator[tuple[str, str]]:
    """(path, kind) of every fixture file kdump reads, in a stable order."""
    for dirpath, dirs, names in os.walk(FIXTURES):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            found = logdir.classify(path)
            if found is not None:
                yield path, found[0]


def segment_slices(data: bytes) -> Iterator[bytes]:
    """Runs of whole batches (each under MAX_SEED bytes), plus a torn cut of the first."""
    batches = list(Walker(data))
    i = 0
    while i < len(batches):
        start = batches[i].position
        j = i
        while j + 1 < len(batches) and batches[j + 1].next_position - start <= MAX_SEED:
            j += 1
        end = batches[j].next_position
        if end - start <= MAX_SEED:
            yield data[start:end]
        i = j + 1 + 8 * (j - i + 1)        # skip ahead: neighbouring runs look alike
    if batches and batches[0].size > 40:
        yield data[:batches[0].size // 2]


def batches_of(data: bytes):
    for batch in Walker(data):
        yield batch


def collect() -> dict[str, list[bytes]]:
    seeds: dict[str, list[bytes]] = {t: [] for t in TARGETS}
    for path, kind in fixture_files():
        with open(path, "rb") as f:
            data = f.read()
        topic = os.path.basename(os.path.dirname(path)).rsplit("-", 1)[0]
        if kind in (logdir.LOG, logdir.KRAFT_SNAPSHOT):
            seeds["walker"].extend(segment_slices(data))
            for batch in batches_of(data):
                _batch_seeds(seeds, data, batch, topic)
        else:
            selector = {logdir.INDEX: 0, logdir.TIMEINDEX: 1, logdir.TXNINDEX: 2,
                        logdir.PRODUCER_SNAPSHOT: 3}.get(kind)
            if kind in (logdir.LEADER_EPOCH, logdir.OFFSET_CHECKPOINT):
                name = os.path.basename(path).split(".")[0]
                kinds = ("leader-epoch-checkpoint", "recovery-point-offset-checkpoint",
                         "log-start-offset-checkpoint", "replication-offset-checkpoint",
                         "cleaner-offset-checkpoint")
                selector = 4 + kinds.index(name) if name in kinds else 5
            elif kind == logdir.PARTITION_METADATA:
                selector = 9
            elif kind == logdir.META_PROPERTIES:
                selector = 10
            elif kind == logdir.QUORUM_STATE:
                selector = 11
            elif kind == logdir.CLEAN_SHUTDOWN:
                selector = 12
            if selector is not None:
                seeds["sidefiles"].append(bytes((selector,)) + data[:MAX_SEED])
    seeds["sidefiles"].append(b"\x0dAAAAAAAAAAAAAAAAAAAAAA")
    # record-count bombs: a zstd batch of 300,000 empty records; the records harness's bomb mode
    seeds["walker"].append(build_record_count_bomb(300_000))
    # and a gzip v1 wrapper of 300,000 empty inner messages (10 MB, past STREAM_THRESHOLD: read as a stream)
    seeds["walker"].append(build_legacy_count_bomb(300_000, same_offset=True))
    seeds["records"] += [b"\x80\xff", b"\x81\x10" + EMPTY_RECORD * 3, b"\x80\x05\x0c\x00"]
    seeds["records"] += [b"\x40\x00" + bytes.fromhex(h) for h in ("00", "01", "feffffff0f", "ffffffff1f",
                                                                  "ffffffffffffffffff01", "80808080808080808080")]
    seeds["records"] += _timestamp_overflow_seeds()
    seeds["walker"].append(timestamp_overflow_segment())
    seeds["schemas"] += _schema_seeds()
    # the command harnesses: a variant byte, then a segment (small runs of real batches, and edges)
    segments = [s for s in seeds["walker"] if len(s) <= MAX_SEED][::4][:CLI_SEEDS] + edge_segments()
    for target in ("text", "ndjson", "scan", "info"):
        seeds[target] = [bytes((i,)) + segment for i, segment in enumerate(segments)]
    seeds["indexes"] = _index_seeds()
    import fuzz_avro

    seeds["avro"] = fuzz_avro.seeds()
    return seeds


def _index_seeds() -> list[bytes]:
    """Fixture segments with their .index and .timeindex (each under 256 bytes), in fuzz_indexes' layout."""
    out = []
    for path, kind in fixture_files():
        if kind != logdir.LOG or os.path.getsize(path) > MAX_SEED:
            continue
        sides = []
        for suffix in (".index", ".timeindex"):
            side = path[:-4] + suffix
            sides.append(open(side, "rb").read() if os.path.exists(side) else b"")
        if all(len(s) < 256 for s in sides) and len(out) < CLI_SEEDS:
            with open(path, "rb") as f:
                out.append(bytes((len(out), len(sides[0]), len(sides[1]))) + sides[0] + sides[1] + f.read())
    return out


def _schema_seeds() -> list[bytes]:
    from fuzz_schemas import seeds

    return seeds()


def edge_segments() -> list[bytes]:
    """Where the C writers once went wrong: two records at offset 2^63-1, a 70-byte batch
    declaring 100 million records, a timestamp that wraps."""
    from kdump.encode import build_v2_batch

    top = (1 << 63) - 1
    return [build_v2_batch([(0, 0, None, None), (0, 0, None, None)], base_offset=top, last_offset_delta=0),
            build_v2_batch([(0, 0, None, b"ab")], records_count=100_000_000), timestamp_overflow_segment()]


def _timestamp_overflow_seeds() -> list[bytes]:
    """baseTimestamp + timestampDelta past the int64 range (Kafka's long sum wraps): record
    sections under fuzz_records' TS_EDGE header, and a whole segment for the walker."""
    from kdump.encode import encode_v2_record

    out = [bytes((0x80, 2)) + encode_v2_record(0, 4, None, b"a") + encode_v2_record(1, delta, b"k", b"b")
           for delta in (5, 1 << 62, (1 << 63) - 1)]
    return out


def timestamp_overflow_segment() -> bytes:
    """One valid batch whose second record's timestamp wraps past INT64_MAX."""
    from kdump.encode import build_v2_batch

    top = (1 << 63) - 1
    return build_v2_batch([(0, top - 1, None, b"a"), (1, top + 10, None, b"b")], base_timestamp=top - 1,
                          max_timestamp=top)


def _batch_seeds(seeds, data: bytes, batch, topic: str) -> None:
    try:
        records = decode_records(data, batch, _common.LIMITS)
    except KdumpError:
        records = []
    if batch.magic >= 2:
        try:
            payload = batch_payload(data, batch, _common.LIMITS)
        except KdumpError:
            payload = None
        if payload is not None and len(payload) <= MAX_SEED and batch.count is not None:
            flags = (1 if batch.is_control else 0) | (2 if batch.timestamp_type == 1 else 0) | \
                    (4 if batch.base_sequence >= 0 else 0)
            if 0 <= batch.count < 256:
                seeds["records"].append(bytes((flags, batch.count)) + payload)
            else:
                seeds["records"].append(bytes((flags | 8,)) + struct.pack(">i", batch.count) + payload)
        codec = batch.compression
        raw = bytes(data[batch.position + 61:batch.next_position])
        if codec and len(raw) <= MAX_SEED:
            mode = {1: 0, 2: 2, 3: 4, 4: 8}[codec]
            seeds["codecs"].append(bytes((mode,)) + raw)
            if payload is not None and len(payload) <= MAX_SEED:
                seeds["codecs"].append(bytes((13 + {1: 0, 2: 1, 3: 3, 4: 5}[codec],)) + payload)
    else:
        msg = legacy.Message(data, batch.position + 12, batch.next_position)
        if msg.codec and msg.value is not None and len(msg.value) <= MAX_SEED:
            mode = {1: 0, 2: 2, 3: 6 if msg.magic == 0 else 4}.get(msg.codec)
            if mode is not None:
                seeds["codecs"].append(bytes((mode,)) + msg.value)
            try:
                inner = legacy.decompress(msg.codec, msg.value, msg.magic)
            except KdumpError:
                inner = None
            if inner is not None and len(inner) <= MAX_SEED:
                flags = 16 | (64 if msg.magic == 1 else 0) | (2 if msg.timestamp_type == 1 else 0)
                seeds["records"].append(bytes((flags | 8,)) + struct.pack(">i", batch.last_offset & 0x7FFFFFFF)
                                        + inner)
    decoder = {"__consumer_offsets": 0, "__transaction_state": 1, "__cluster_metadata": 2}.get(topic)
    for r in records[:20]:
        if r.control is not None and r.control.type >= 2 and r.value is not None:
            seeds["decoders"].append(bytes((3 + r.control.type - 2, 255)) + r.value)
        elif decoder is not None:
            key = r.key
            if key is not None and len(key) >= 255:
                continue
            head = bytes((decoder | (0x80 if r.value is None else 0), 255 if key is None else len(key)))
            seeds["decoders"].append(head + (key or b"") + (r.value or b""))


def write(out: str, seeds: dict[str, list[bytes]]) -> dict[str, int]:
    counts = {}
    for target, items in seeds.items():
        directory = os.path.join(out, target)
        os.makedirs(directory, exist_ok=True)
        unique = {hashlib.sha1(s).hexdigest(): s for s in items if s}
        # Round-robin over the selector byte so rare modes (legacy wrappers, KRaft
        # records) are not crowded out by the thousands of __consumer_offsets batches.
        buckets: dict[int, list] = {}
        for digest, seed in sorted(unique.items()):
            buckets.setdefault(seed[0] if target != "walker" else seed[16:17] and seed[16], []).append((digest, seed))
        chosen = []
        queues = list(buckets.values())
        while queues and len(chosen) < MAX_SEEDS:
            queues = [q for q in queues if q]
            for q in queues:
                if len(chosen) < MAX_SEEDS:
                    chosen.append(q.pop(0))
        for digest, seed in chosen:
            path = os.path.join(directory, f"seed-{digest}")
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(seed)
        counts[target] = len(chosen)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(_common.HERE, "corpus"))
    args = parser.parse_args(argv)
    counts = write(args.out, collect())
    for target, n in counts.items():
        print(f"{target}: {n} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
