"""Payload views and the decoders of Kafka's internal topics.

``payload.PayloadView`` is how a command shows keys, values and headers (``basic``:
--encoding and --key/--value-decoder; an internal-topic decoder below); renderers format
what it gives and never decode. ``kafka_text`` prints names and JSON as Kafka's tools do.
The generated-message reader these decoders use is ``kdump.format.message_spec``.

Each internal-topic decoder module exposes ``decode(key, value, kafka) -> dict`` and
``text(decoded, kafka)`` (``kafka``: the ``kafka_lines.KafkaLine`` whose classes read the bytes
and whose DumpLogSegments text to print); they are imported lazily by name (see ``INTERNAL_DECODERS``) so that
plain dumps never pay for loading schemas.
"""

from __future__ import annotations

INTERNAL_DECODERS = {
    "offsets": "kdump.decoders.consumer_offsets",
    "transaction-log": "kdump.decoders.transaction_state",
    "cluster-metadata": "kdump.decoders.cluster_metadata",
    "remote-log-metadata": "kdump.decoders.remote_log_metadata",
    "share-group-state": "kdump.decoders.share_group_state",
}

_TOPIC_DECODERS = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transaction-log",
    "__cluster_metadata": "cluster-metadata",
    "__remote_log_metadata": "remote-log-metadata",
    "__share_group_state": "share-group-state",
}


def for_topic(topic: str) -> str | None:
    """The decoder name for an internal topic (``__consumer_offsets`` -> ``offsets``), else None."""
    return _TOPIC_DECODERS.get(topic)
