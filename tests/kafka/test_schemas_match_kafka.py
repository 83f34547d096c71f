"""kdump's record schemas (kdump/format/schemas/*.json) against the oracle Kafka's own.

The oracle's jars (tests/kafka/pom.xml) carry the message specs Kafka generates its record
classes from: kafka-metadata's ``common/metadata/*.json`` (``__cluster_metadata``), the group,
share and transaction coordinators' ``common/message/*.json``. Every record type of those
specs must be in kdump's tables under the same id, with the same versions and flexible
versions, and every field with the same name, type, tag, nullable versions and (untagged)
versions, structs included. Reading the jars takes no JVM.
"""

from __future__ import annotations

import json
import re
import zipfile

import kafka_jars
import pytest

from kdump.format.message_spec import load

# jar -> kdump's schema file of the topic its coordinator-key/-value records are in
JARS = {"kafka-metadata": "cluster_metadata.json", "kafka-group-coordinator": "consumer_offsets.json",
        "kafka-share-coordinator": "share_group_state.json",
        "kafka-transaction-coordinator": "transaction_state.json"}
# __consumer_offsets type 0: Kafka 4 reads LegacyOffsetCommitValue (OffsetCommitValue v0);
# kdump reads the superset, OffsetCommitValue v0-4, so that older brokers' values decode too.
SUPERSET = {("consumer_offsets.json", 0, "coordinator-value")}
_COMMENT = re.compile(r"^\s*//.*$", re.M)


def _specs():
    version = kafka_jars.kafka_version()
    folder = kafka_jars.ensure_jars()
    for jar, ours in JARS.items():
        with zipfile.ZipFile(folder / f"{jar}-{version}.jar") as z:
            for name in sorted(z.namelist()):
                if re.match(r"common/(message|metadata)/\w+\.json$", name):
                    yield ours, json.loads(_COMMENT.sub("", z.read(name).decode()))


def _span(versions: str | None, top: int) -> frozenset[int] | None:
    """A version range ("N", "N+", "N-M", "none") as the versions it names up to ``top``."""
    if versions is None:
        return None
    if versions == "none":
        return frozenset()
    low, _, high = versions.partition("-")
    if low.endswith("+"):
        return frozenset(range(int(low[:-1]), top + 1))
    return frozenset(range(int(low), int(high or low) + 1))


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _ours_for(ours: str, spec: dict) -> dict:
    schemas = load(ours)
    for entry in schemas.raw["records"]:
        if entry["id"] == spec["apiKey"]:
            if spec["type"] == "metadata":
                return schemas.raw["messages"][entry["name"] + "Record"]
            return schemas.raw["messages"][entry["key" if spec["type"] == "coordinator-key" else "value"]]
    raise AssertionError(f"{ours} has no record type {spec['apiKey']} ({spec['name']})")


def _fields(path: str, theirs: list[dict], ours: list[dict], their_structs: dict, our_structs: dict,
            top: int, out: list[str]) -> None:
    mine = {f["name"]: f for f in ours}
    for f in theirs:
        name = _camel(f["name"])
        o = mine.pop(name, None)
        if o is None:
            out.append(f"{path}.{name}: not in kdump's schema ({f})")
            continue
        checks = [("type", f["type"].startswith("[]"), o["type"].startswith("[]")),
                  ("tag", f.get("tag"), o.get("tag")),
                  ("nullable", _span(f.get("nullableVersions"), top), _span(o.get("null"), top))]
        if f["type"].lstrip("[]")[:1].islower() or f["type"].lstrip("[]") in ("Uuid",):
            checks.append(("type", f["type"].lower(), o["type"].lower()))
        if f.get("tag") is None:
            checks.append(("versions", _span(f.get("versions", "0+"), top), _span(o.get("v", "0+"), top)))
        out += [f"{path}.{name}: {what} {a!r} in Kafka, {b!r} in kdump" for what, a, b in checks if a != b]
        sub = f.get("fields") or their_structs.get(f["type"].lstrip("[]"))
        if sub:
            _fields(f"{path}.{name}", sub, o.get("fields") or our_structs.get(o["type"].lstrip("[]"), []),
                    their_structs, our_structs, top, out)
    out += [f"{path}.{name}: in kdump's schema, not in Kafka's" for name in mine]


def test_every_record_schema_is_kafkas():
    problems: list[str] = []
    count = 0
    for ours, spec in _specs():
        if spec.get("type") not in ("metadata", "coordinator-key", "coordinator-value"):
            continue
        count += 1
        msg = _ours_for(ours, spec)
        if (ours, spec["apiKey"], spec["type"]) in SUPERSET:
            continue
        where = f"{ours} {spec['name']}"
        if spec["validVersions"] != msg["versions"]:
            problems.append(f"{where}: versions {spec['validVersions']} in Kafka, {msg['versions']} in kdump")
        if spec.get("flexibleVersions", "none") != msg.get("flexible", "none"):
            problems.append(f"{where}: flexible {spec.get('flexibleVersions')} in Kafka, "
                            f"{msg.get('flexible')} in kdump")
        structs = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
        top = max(_span(spec["validVersions"], 99) or {0})
        _fields(where, spec["fields"], msg["fields"], structs, msg.get("structs", {}), top, problems)
    assert count > 70, f"only {count} record specs found in Kafka {kafka_jars.kafka_version()}'s jars"
    assert not problems, f"{len(problems)} differences from Kafka {kafka_jars.kafka_version()}:\n" + "\n".join(problems)


@pytest.mark.parametrize("record", ["UnregisterControllerRecord"])
def test_newest_metadata_records_are_known(record):
    assert record in load("cluster_metadata.json").raw["messages"]
