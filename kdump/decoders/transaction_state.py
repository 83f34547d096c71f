"""Decoder for ``__transaction_state`` (TransactionLogKey / TransactionLogValue v0-1).

Besides Kafka's fields kdump adds ``transactionStatusName``, the readable name of the
``transactionStatus`` byte (TransactionState), right after it; the DumpLogSegments-style
text leaves it out so that text stays identical to Kafka's.
"""

from __future__ import annotations

from typing import Any

from kdump.decoders import coordinator
from kdump.decoders.kafka_lines import NEWEST_LINE, TRANSACTION_LOG_JSON, TRANSACTION_STATUS_NAME, KafkaLine

SCHEMA_FILE = "transaction_state.json"
STATUS = "transactionStatus"
STATUS_NAME = "transactionStatusName"


def table() -> coordinator.RecordTable:
    return coordinator.record_table(SCHEMA_FILE)


def status_name(status: int) -> str:
    return table().schemas.raw["statuses"].get(str(status), f"Unknown({status})")


def decode(key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value, kafka, "transaction-log")
    txn = decoded["value"]
    if txn is not None and STATUS in txn:
        decoded["value"] = coordinator.insert_after(txn, STATUS, STATUS_NAME, status_name(txn[STATUS]))
    return decoded


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    if not kafka.has(TRANSACTION_LOG_JSON):
        return _scala_text(decoded)
    txn = decoded["value"]
    if txn is not None and STATUS_NAME in txn:
        txn = coordinator.without(txn, STATUS_NAME)
        if kafka.has(TRANSACTION_STATUS_NAME) and STATUS in txn:
            # TransactionState.stateName(), an id it does not know as its number (a JSON string)
            status = txn[STATUS]
            name = table().schemas.raw["statuses"].get(str(status), str(status))
            txn = {k: (name if k == STATUS else v) for k, v in txn.items()}
        decoded = {**decoded, "value": txn}
    return coordinator.text(decoded)


error_text = coordinator.error_text


def _scala_text(decoded: dict[str, Any]) -> tuple[str | None, str | None]:
    """TransactionLog.formatRecordKeyAndValue (Kafka up to 4.0): key and value as Scala wrote them."""
    key = f"transaction_metadata::transactionalId={decoded['key']['transactionalId']}"
    txn = decoded["value"]
    if txn is None:
        return key, coordinator.DELETE
    partitions = [] if txn[STATUS] == 0 else [(p["topic"], i) for p in txn["transactionPartitions"] or ()
                                              for i in p["partitionIds"]]
    return key, (f"producerId:{txn['producerId']},producerEpoch:{txn['producerEpoch']},"
                 f"state={status_name(txn[STATUS])},partitions=[{','.join(_partitions(partitions))}],"
                 f"txnLastUpdateTimestamp={txn['transactionLastUpdateTimestampMs']},"
                 f"txnTimeoutMs={txn['transactionTimeoutMs']}")


def java_hash(text: str) -> int:
    """String.hashCode(), unsigned."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _partitions(partitions: list[tuple[str, int]]) -> list[str]:
    unique = list(dict.fromkeys(partitions))
    # TopicPartition.hashCode
    order = scala_hash_order(unique, lambda tp: 31 * (31 + tp[1]) + java_hash(tp[0]))
    return [f"{t}-{p}" for t, p in order]


def scala_hash_order(items: list, hash_code) -> list:
    """``items`` (distinct) as a Scala 2.13 mutable.HashSet or HashMap iterates them: by bucket
    (the improved hash masked by a table of 16 slots, doubled on reaching 3/4 full), then by
    hash, then as added."""
    size = 16
    while len(items) >= size * 3 // 4:
        size *= 2
    hashes = []
    for item in items:
        h = hash_code(item) & 0xFFFFFFFF
        h ^= h >> 16
        hashes.append(h - (1 << 32) if h & 0x80000000 else h)
    return [items[i] for i in sorted(range(len(items)), key=lambda i: (hashes[i] & (size - 1), hashes[i], i))]
