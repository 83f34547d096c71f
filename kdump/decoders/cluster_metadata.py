"""Decoder for KRaft ``__cluster_metadata`` records (logs and ``.checkpoint`` snapshots).

A value is ``uvarint frameVersion | uvarint apiKey | uvarint version | body``
(``AbstractApiMessageSerde``, read by ``frame.py``); only frame version 1 exists (0 was the
2.8 preview, whose records were not flexible). Keys are unused. Record types are the
``records`` table of ``schemas/cluster_metadata.json``; a type's name is DumpLogSegments'
(``TOPIC_RECORD``).
"""

from __future__ import annotations

from typing import Any

from kdump.decoders import frame, kafka_lines
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.decoders.kafka_text import strip_private, to_json
from kdump.errors import DecodeError

SCHEMA_FILE = "cluster_metadata.json"
ERROR_IN_PAYLOAD = True     # no key: DumpLogSegments prints a decode error as the payload

MetadataType = frame.FramedType


def types() -> dict[int, MetadataType]:
    return frame.record_types(SCHEMA_FILE)


def decode(key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE) -> dict[str, Any]:
    """Decode one metadata record value (the key is ignored, as Kafka does). The lines' differences
    are in the text (``text``), none in how the bytes read (``kafka``: the decoders' one interface)."""
    mtype, version, data = frame.decode(value, types())
    return {"type": mtype.name, "type_id": mtype.id, "version": version, "key": None, "value": data}


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    """DumpLogSegments' payload: ``{"type":"TOPIC_RECORD","version":0,"data":{…}}``; no key."""
    try:
        data = kafka.schema_text("cluster-metadata", decoded["type"], decoded["version"], decoded["value"])
    except kafka_lines.SchemaError as e:
        # MetadataRecordSerde's words for a type id and for a version its classes do not know
        raise DecodeError(f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
                          f"{decoded['type_id']}" if e.unknown_type else
                          f"Failed to deserialize record with type {decoded['type_id']}") from None
    return None, to_json({"type": decoded["type"], "version": decoded["version"], "data": strip_private(data)})


def error_text(error: DecodeError, offset: int) -> str:
    """The line DumpLogSegments prints for a metadata record it could not decode."""
    return f"Error at {offset}, skipping. {getattr(error, 'detail', error.message)}"
