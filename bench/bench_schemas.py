#!/usr/bin/env python3
"""``kdump dump --json --value-decoder avro`` against a Python loop of confluent-kafka's
AvroDeserializer over the same records, in the same run (issue #30: kdump at least 3x).

    python bench/bench_schemas.py [--records 1000000] [--repeat 3]

Writes bench/data/avro-<N>/: a log dir with one ``orders-0`` partition of N Avro records
(framed as confluent-kafka frames them, 100 a batch, 10 fields: long, string, double, int,
boolean, an enum, an optional string, timestamp-millis, decimal, an array) and the
``_schemas-0`` partition holding the schema, as Schema Registry writes it. The deserializer's
registry client reads that schema over HTTP from tests/support/registry.py started from the
same ``_schemas`` records (fetched once, then cached by the client); its loop runs over the
values already in memory, so it pays nothing for reading the log.
"""

from __future__ import annotations

import argparse
import decimal
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kdump.encode import build_v2_batch  # noqa: E402

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "qty", "type": "int"}, {"name": "paid", "type": "boolean"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}
PER_BATCH = 100


def values(n: int) -> list[bytes]:
    import fastavro

    parsed = fastavro.parse_schema(SCHEMA)
    out = []
    for i in range(n):
        buf = io.BytesIO()
        buf.write(b"\x00\x00\x00\x00\x01")
        fastavro.schemaless_writer(buf, parsed, {
            "id": i, "customer": f"customer-{i % 5000}", "amount": i * 0.25, "qty": i % 17, "paid": bool(i & 1),
            "status": ("NEW", "PAID", "SHIPPED")[i % 3], "note": None if i % 4 else f"note {i}",
            "placed": 1700000000000 + i, "price": decimal.Decimal(i % 100000) / 100,
            "tags": ["a", "b"][: i % 3]})
        out.append(buf.getvalue())
    return out


def write_logdir(d: Path, vals: list[bytes]) -> None:
    part = d / "orders-0"
    part.mkdir(parents=True)
    with open(part / "00000000000000000000.log", "wb") as f:
        for start in range(0, len(vals), PER_BATCH):
            f.write(build_v2_batch([{"key": None, "value": v, "timestamp": 1700000000000}
                                    for v in vals[start:start + PER_BATCH]], base_offset=start))
    schemas = d / "_schemas-0"
    schemas.mkdir()
    key, value = schemas_record()
    (schemas / "00000000000000000000.log").write_bytes(build_v2_batch([{"key": key, "value": value}]))


def schemas_record() -> tuple[bytes, bytes]:
    """The schema's record in _schemas, as Schema Registry writes it."""
    key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}).encode()
    value = json.dumps({"subject": "orders-value", "version": 1, "id": 1, "schema": json.dumps(SCHEMA),
                        "deleted": False}).encode()
    return key, value


def kdump_run(d: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the command, start-up included."""
    import resource

    kdump = Path(sys.executable).with_name("kdump")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(os.devnull, "w") as null:
        subprocess.run([str(kdump), "dump", str(d / "orders-0"), "--json", "--value-decoder", "avro", "-q"],
                       stdout=null, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def confluent_run(d: Path, vals: list[bytes]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the loop."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from support.registry import Registry

    reg = Registry.from_records([schemas_record()])
    server, url = reg.serve()
    try:
        de = AvroDeserializer(SchemaRegistryClient({"url": url}))
        ctx = SerializationContext("orders", MessageField.VALUE)
        de(vals[0], ctx)                       # the one HTTP fetch of the schema, then cached
        t, c = time.perf_counter(), time.process_time()
        for v in vals:
            de(v, ctx)
        return time.perf_counter() - t, time.process_time() - c
    finally:
        server.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    d = ROOT / "bench" / "data" / f"avro-{a.records}"
    vals = values(a.records)
    if not d.exists():
        write_logdir(d, vals)
    best_k, best_c = (float("inf"),) * 2, (float("inf"),) * 2
    for n in range(a.repeat):                     # interleaved rounds; the machine may be shared
        k = kdump_run(d)
        c = confluent_run(d, vals)
        best_k, best_c = min(best_k, k), min(best_c, c)
        print(f"round {n + 1}: kdump dump --json --value-decoder avro {a.records / k[0]:,.0f} rec/s "
              f"({k[0]:.2f} s wall, {k[1]:.2f} s CPU); AvroDeserializer loop {a.records / c[0]:,.0f} rec/s "
              f"({c[0]:.2f} s wall, {c[1]:.2f} s CPU); kdump {c[0] / k[0]:.2f}x wall, {c[1] / k[1]:.2f}x CPU",
              flush=True)
    print(f"best of {a.repeat}: kdump {a.records / best_k[0]:,.0f} rec/s, AvroDeserializer "
          f"{a.records / best_c[0]:,.0f} rec/s: {best_c[0] / best_k[0]:.2f}x wall; CPU seconds "
          f"{best_k[1]:.2f} vs {best_c[1]:.2f}: {best_c[1] / best_k[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
