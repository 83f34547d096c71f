"""Decoder for ``__transaction_state`` (TransactionLogKey / TransactionLogValue v0-1).

Besides Kafka's fields kdump adds ``transactionStatusName``, the readable name of the
``transactionStatus`` byte (TransactionState), right after it; the DumpLogSegments-style
text leaves it out so that text stays identical to Kafka's.
"""

from __future__ import annotations

from typing import Any

from . import coordinator

SCHEMA_FILE = "transaction_state.json"
STATUS_NAME = "transactionStatusName"

_table: coordinator.RecordTable | None = None


def table() -> coordinator.RecordTable:
    global _table
    if _table is None:
        _table = coordinator.RecordTable(SCHEMA_FILE)
    return _table


def status_name(status: int) -> str:
    return table().schemas.raw["statuses"].get(str(status), f"Unknown({status})")


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    decoded = coordinator.decode(table(), key, value)
    txn = decoded["value"]
    if txn is not None and "transactionStatus" in txn:
        named: dict[str, Any] = {}
        for name, field_value in txn.items():
            named[name] = field_value
            if name == "transactionStatus":
                named[STATUS_NAME] = status_name(field_value)
        decoded["value"] = named
    return decoded


def text(decoded: dict[str, Any]) -> tuple[str | None, str | None]:
    txn = decoded["value"]
    if txn is not None and STATUS_NAME in txn:
        decoded = {**decoded, "value": {k: v for k, v in txn.items() if k != STATUS_NAME}}
    return coordinator.text(decoded)


error_text = coordinator.error_text
