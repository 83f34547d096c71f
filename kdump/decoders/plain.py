"""Views of key, value and header bytes: ``--encoding`` and ``--key-decoder/--value-decoder``.

An *encoding* is lossless or replacing text for any bytes (utf8 replaces invalid bytes
with U+FFFD exactly as Java's ``new String(bytes, UTF_8)`` does; hex and base64 are lossless).
A *decoder* interprets the bytes (json; int and long as Kafka's IntegerDecoder and
LongDecoder: the first 4 or 8 bytes, big-endian) and may fail on bytes that are not what
it expects, which the caller reports per record.
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Callable
from typing import Any

from kdump.errors import DecodeError
from kdump.format.javautf8 import java_utf8

ENCODINGS = ("utf8", "hex", "base64")
DECODERS = ("utf8", "hex", "base64", "json", "int", "long")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


utf8 = java_utf8


def hex_(data: bytes) -> str:
    return data.hex()


def base64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def json_(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise DecodeError(f"not JSON: {e}") from None
    except RecursionError:
        # json.loads recurses per nesting level; a hostile value must not end the dump.
        raise DecodeError("not JSON kdump can show: nested too deeply") from None


def int_(data: bytes) -> int:
    if len(data) < 4:
        raise DecodeError(f"int decoder needs 4 bytes, got {len(data)}")
    return _INT.unpack_from(data)[0]


def long_(data: bytes) -> int:
    if len(data) < 8:
        raise DecodeError(f"long decoder needs 8 bytes, got {len(data)}")
    return _LONG.unpack_from(data)[0]


_FUNCS: dict[str, Callable[[bytes], Any]] = {"utf8": utf8, "hex": hex_, "base64": base64, "json": json_,
                                             "int": int_, "long": long_}


# kafka-dump-log.sh's --key-decoder-class/--value-decoder-class: the decoders Kafka ships
# (javap of each line's jars): org.apache.kafka.tools.api's from 3.8 (kafka-tools-api),
# kafka.serializer's Scala ones up to 3.9 (kafka_2.13; kafka_lines.KAFKA_SERIALIZER_GONE).
# The first name of each simple name is the one it stands for.
KAFKA_DECODER_CLASSES = {"org.apache.kafka.tools.api.StringDecoder": "utf8",
                         "org.apache.kafka.tools.api.IntegerDecoder": "int",
                         "org.apache.kafka.tools.api.LongDecoder": "long",
                         "kafka.serializer.StringDecoder": "utf8",
                         "kafka.serializer.IntegerDecoder": "int",
                         "kafka.serializer.LongDecoder": "long"}
# Shipped too, but what DumpLogSegments prints with them is a Java array's identity
# ("[B@6d06d69c"), another every run: nothing to reproduce.
KAFKA_IDENTITY_DECODERS = ("org.apache.kafka.tools.api.DefaultDecoder", "kafka.serializer.DefaultDecoder")


def get(name: str) -> Callable[[bytes], Any]:
    return _FUNCS[name]


def as_text(value: Any) -> str:
    """How a decoded value prints in the text view (JSON compactly, strings as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
