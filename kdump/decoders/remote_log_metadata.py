"""Decoder for ``__remote_log_metadata`` (KIP-405 tiered storage; ``--remote-log-metadata-decoder``).

The topic-based RemoteLogMetadataManager writes null-keyed records whose values use the
``__cluster_metadata`` frame (``frame.py``): apiKey 0 RemoteLogSegmentMetadata (a segment
copy starts), 1 RemoteLogSegmentMetadataUpdate (its state moves on), 2
RemotePartitionDeleteMetadata, 3 RemoteLogSegmentMetadataSnapshot; the schemas are
``schemas/remote_log_metadata.json``.

Kafka's DumpLogSegments prints the Java ``toString()`` of the deserialized object
(``RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=…, state=COPY_SEGMENT_FINISHED, …}``),
which is neither machine-readable nor complete (custom metadata shows only its size).
kdump's text payload is instead the cluster-metadata style compact JSON,
``{"type":"REMOTE_LOG_SEGMENT_METADATA_RECORD","version":0,"data":{…}}``, with the fields
as Kafka's generated JSON converters name them. Decode errors read like DumpLogSegments'
(``Error at offset N, skipping. <message>``) and, records having no key, go in the payload.

kdump's JSON adds ``remoteLogSegmentStateName`` / ``remotePartitionDeleteStateName`` next
to the state codes (``Unknown(N)`` for a code Kafka does not define, which Kafka's own
deserializer would reject); the text leaves them out.
"""

from __future__ import annotations

from typing import Any

from kdump.decoders import frame
from kdump.decoders.coordinator import insert_after
from kdump.decoders.kafka_lines import NEWEST_LINE, KafkaLine
from kdump.decoders.kafka_text import strip_private, to_json
from kdump.errors import DecodeError
from kdump.format.message_spec import load

SCHEMA_FILE = "remote_log_metadata.json"
ERROR_IN_PAYLOAD = True     # no key: the error line is the payload, as for cluster metadata

# state code field -> (kdump's name field, table of names in the schema file)
_STATES = {"remoteLogSegmentState": ("remoteLogSegmentStateName", "segment_states"),
           "remotePartitionDeleteState": ("remotePartitionDeleteStateName", "partition_delete_states")}
_NAMES = {name for name, _ in _STATES.values()}


def types() -> dict[int, frame.FramedType]:
    return frame.record_types(SCHEMA_FILE)


def state_name(field: str, code: int) -> str:
    """``COPY_SEGMENT_FINISHED`` for remoteLogSegmentState 1, ``Unknown(9)`` for an undefined code."""
    return load(SCHEMA_FILE).raw[_STATES[field][1]].get(str(code), f"Unknown({code})")


def decode(key: bytes | None, value: bytes | None, kafka: KafkaLine = NEWEST_LINE) -> dict[str, Any]:
    """Decode one record value (the key is ignored, as Kafka does; it is always null). No
    line reads these values' bytes otherwise (``kafka`` is for the decoders' one interface)."""
    rtype, version, data = frame.decode(value, types())
    for field, (name, _) in _STATES.items():
        if field in data:
            data = insert_after(data, field, name, state_name(field, data[field]))
    return {"type": rtype.name, "type_id": rtype.id, "version": version, "key": None, "value": data}


def text(decoded: dict[str, Any], kafka: KafkaLine = NEWEST_LINE) -> tuple[str | None, str | None]:
    """The payload ``{"type":"REMOTE_PARTITION_DELETE_METADATA_RECORD","version":0,"data":{…}}``; no key."""
    data = {k: v for k, v in decoded["value"].items() if k not in _NAMES}
    return None, to_json({"type": decoded["type"], "version": decoded["version"], "data": strip_private(data)})


def error_text(error: DecodeError, offset: int) -> str:
    """DumpLogSegments' line for a record it could not decode (note: "at offset N", unlike
    cluster metadata's "at N")."""
    return f"Error at offset {offset}, skipping. {getattr(error, 'detail', error.message)}"
