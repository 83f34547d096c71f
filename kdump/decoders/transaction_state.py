"""Decoder for ``__transaction_state`` (TransactionLogKey / TransactionLogValue v0-1).

Besides Kafka's fields kdump adds ``transactionStatusName``, the readable name of the
``transactionStatus`` byte (TransactionState), right after it; the DumpLogSegments-style
text leaves it out so that text stays identical to Kafka's.
"""

from __future__ import annotations

from typing import Any

from kdump.decoders import coordinator
from kdump.decoders.kafka_lines import NEWEST_LINE, TRANSACTION_STATUS_NAME, KafkaLine

SCHEMA_FILE = "transaction_state.json"
STATUS = "transactionStatus"
STATUS_NAME = "transactionStatusName"


def table() -> coordinator.RecordTable:
    return coordinator.record_table(SCHEMA_FILE)


def status_name(status: int) -> str:
    return table().schemas.raw["statuses"].get(str(status), f"Unknown({status})")


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value)
    txn = decoded["value"]
    if txn is not None and STATUS in txn:
        decoded["value"] = coordinator.insert_after(txn, STATUS, STATUS_NAME, status_name(txn[STATUS]))
    return decoded


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
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
