"""Java's ``long`` arithmetic, which Kafka's record timestamps follow.

A v2 record's timestamp is ``baseTimestamp + timestampDelta`` (DefaultRecord.readFrom), a
Java ``long`` sum: past the int64 range it wraps, silently, and every Kafka reader
(consumers, kafka-dump-log.sh) sees the wrapped value. kdump gives the same value;
``wrapped`` tells a reader that it was wrapped (the ``timestamp_overflow`` finding). The C
decoder (``_speedups/records.c``) follows ``long_add``; tests/speedups prove them equal.
"""

from __future__ import annotations

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_SPAN = 1 << 64
def long_add(a: int, b: int) -> int:
    """``a + b`` as a Java long (both int64): wrapped into [INT64_MIN, INT64_MAX]."""
    s = a + b
    if INT64_MIN <= s <= INT64_MAX:
        return s
    return s - _SPAN if s > INT64_MAX else s + _SPAN


def unwrapped_range(base: int) -> tuple[int, int]:
    """The values ``long_add(base, delta)`` takes without wrapping, for int64 deltas: [lo, hi]
    (an unwrapped sum is within one int64 of the base; a wrapped one is 2**64 away)."""
    return max(base + INT64_MIN, INT64_MIN), min(base + INT64_MAX, INT64_MAX)


def wrapped(base: int, value: int) -> bool:
    """Is ``value = long_add(base, delta)`` a wrapped sum, for the int64 delta that gave it?"""
    lo, hi = unwrapped_range(base)
    return not lo <= value <= hi


def wrap_message(offset: int, base: int, value: int) -> str:
    """What ``timestamp_overflow`` says of the record at ``offset`` (verify --deep, export)."""
    return (f"record {offset}: baseTimestamp {base} + timestampDelta is past the int64 range; Kafka's long "
            f"arithmetic wraps it to {value}")
