"""Payload decoders for Kafka's internal topics.

Each decoder module exposes ``decode(key, value) -> dict`` and ``text(decoded)``; they
are imported lazily by name (see ``INTERNAL_DECODERS``) so that plain dumps never pay
for loading schemas.
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
