"""Fuzz the payload decoders: __consumer_offsets, __transaction_state, __cluster_metadata,
the KRaft control record bodies and the --key/--value-decoder views.

Input: ``selector | key length (1 byte, 255 = null key) | key | value`` (an empty value
after a selector bit set means null). Oracle: only KdumpErrors escape, and whatever
decodes also renders (the decoder's ``text()`` and ``to_json``) without raising.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402

from kdump.decoders import (  # noqa: E402
    cluster_metadata,
    consumer_offsets,
    kafka_text,
    plain,
    transaction_state,
)
from kdump.errors import KdumpError  # noqa: E402
from kdump.format import kraft_control  # noqa: E402

NULL_VALUE = 0x80


def _internal(module):
    def run(key, value) -> None:
        try:
            decoded = module.decode(key, value)
        except KdumpError:
            return
        module.text(decoded)
        kafka_text.to_json(kafka_text.strip_private(decoded))
    return run


def _control(ctype: int):
    def run(key, value) -> None:
        try:
            decoded = kraft_control.decode_control_value(ctype, value)
        except KdumpError:
            return
        kafka_text.to_json(decoded)
    return run


def _view(name: str):
    def run(key, value) -> None:
        for data in (key, value):
            if data is None:
                continue
            try:
                decoded = plain.get(name)(data)
            except KdumpError:
                continue
            plain.as_text(decoded)
            json.dumps(decoded)
    return run


TARGETS = [_internal(consumer_offsets), _internal(transaction_state), _internal(cluster_metadata),
           *(_control(t) for t in range(2, 8)), *(_view(n) for n in plain.DECODERS)]


def check(data: bytes) -> None:
    if len(data) < 2:
        return
    selector, klen = data[0], data[1]
    if klen == 255:
        key, rest = None, data[2:]
    else:
        key, rest = data[2:2 + klen], data[2 + klen:]
    value = None if (selector & NULL_VALUE and not rest) else rest
    TARGETS[(selector & 0x7F) % len(TARGETS)](key, value)


if __name__ == "__main__":
    _common.main(check)
