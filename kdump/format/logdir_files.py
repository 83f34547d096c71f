"""Small metadata files of a log dir: partition.metadata, meta.properties, quorum-state and
.kafka_cleanshutdown. Each parser takes the file's bytes and returns a plain dict, or
raises InvalidFileError with Kafka's message where Kafka has one; ``position`` is the
1-based line for the line-oriented files and the character offset for the JSON ones.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from kdump.errors import InvalidFileError
from kdump.format.javanumber import INT64, clip, java_int, json_int

PARTITION_METADATA_FILE, META_PROPERTIES_FILE = "partition.metadata", "meta.properties"
QUORUM_STATE_FILE, CLEAN_SHUTDOWN_FILE = "quorum-state", ".kafka_cleanshutdown"

_LINE_END = re.compile(r"\r\n|\r|\n")


def _text(data: bytes, file_name: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidFileError(f"{file_name} is not valid UTF-8 (byte {e.start})", position=e.start) from None


# -- Uuid (org.apache.kafka.common.Uuid): 16 bytes as unpadded base64url -----------------------

def parse_uuid(text: str) -> bytes:
    """The 16 bytes of a Kafka Uuid string; InvalidFileError with Uuid.fromString's message."""
    if len(text) > 24:
        raise InvalidFileError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    body = text.rstrip("=")
    bad = next((c for c in body if not (c.isascii() and (c.isalnum() or c in "-_"))), None)
    if bad is not None and bad != "=":
        raise InvalidFileError(f"Illegal base64 character {ord(bad):x}")
    # Java's decoder: padding optional but, when present, it must complete the last unit.
    padding = len(text) - len(body)
    if bad == "=" or padding > 2 or len(body) % 4 == 1 or (padding and len(text) % 4 != 0):
        raise InvalidFileError(f"Input string `{text}` is not valid base64")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError) as e:        # unreachable after the checks; kept as a guard
        raise InvalidFileError(f"Input string `{text}` is not valid base64: {e}") from None
    if len(raw) != 16:
        raise InvalidFileError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                               f"expected 16 bytes of a base64-encoded UUID")
    return raw


# -- partition.metadata (PartitionMetadataFile / PartitionMetadataReadBuffer) -----------------

_KEY_SEP = re.compile(r":[ \t\n\x0b\f\r]+")     # Java ":\s+"


def parse_partition_metadata(data: bytes, file_name: str = PARTITION_METADATA_FILE) -> dict[str, Any]:
    """``{"version": int, "topic_id": str}``; only the first two lines are read, as by Kafka."""
    lines = _LINE_END.split(_text(data, file_name))

    def field(i: int, key: str) -> str:
        line = lines[i] if i < len(lines) else None
        parts = _KEY_SEP.split(line, maxsplit=1) if line is not None else []
        if len(parts) != 2 or parts[0] != key:
            raise InvalidFileError(f"Malformed line in partition metadata file [{file_name}]: {clip(line)}",
                                   position=i + 1)
        return parts[1]

    version = java_int(field(0, "version"))
    if version is None:
        raise InvalidFileError(f"Malformed line in partition metadata file [{file_name}]: {clip(lines[0])}",
                               position=1)
    if version < 0:
        raise InvalidFileError(f"Unrecognized version of partition metadata file ({file_name}): {version}",
                               position=1)
    topic_id = field(1, "topic_id")
    try:
        raw = parse_uuid(topic_id)
    except InvalidFileError as e:
        raise InvalidFileError(f"Malformed line in partition metadata file [{file_name}]: {clip(lines[1])}",
                               position=2, hint=e.message) from None
    if raw == bytes(16):
        raise InvalidFileError(f"Invalid topic ID in partition metadata file ({file_name})", position=2)
    return {"version": version, "topic_id": topic_id}


# -- meta.properties (MetaProperties / java.util.Properties.load) -----------------------------

_PROP_SPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, line_no: int) -> str:
    """Undo the escapes of a Properties key or value."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                hexa = text[i + 2:i + 6]
                if len(hexa) != 4 or not all(h in "0123456789abcdefABCDEF" for h in hexa):
                    raise InvalidFileError("Malformed \\uxxxx encoding.", position=line_no)
                out.append(chr(int(hexa, 16)))
                i += 6
            else:
                out.append(_ESCAPES.get(nxt, nxt))
                i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split_property(line: str, line_no: int) -> tuple[str, str]:
    # The key ends at the first unescaped '=', ':' or space; the separator may be
    # spaces, then at most one '=' or ':', then spaces.
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _PROP_SPACE:
            break
        i += 1
    key_raw, rest = line[:i], line[i:]
    rest = rest.lstrip(_PROP_SPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_PROP_SPACE)
    return _unescape(key_raw, line_no), _unescape(rest, line_no)


def _trailing_backslashes(text: str) -> int:
    return len(text) - len(text.rstrip("\\"))


def _logical_lines(text: str):
    """(line number, logical line) pairs: comments and blank lines dropped, continuations joined."""
    natural = _LINE_END.split(text)
    i = 0
    while i < len(natural):
        start = i
        line = natural[i].lstrip(_PROP_SPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        # An odd run of trailing backslashes continues the line on the next one. The run is
        # tracked per piece and the pieces joined once: re-scanning the growing line made
        # a file of many continued lines quadratic.
        parts = [line]
        trail = _trailing_backslashes(line)
        while trail % 2 == 1 and i < len(natural):
            parts[-1] = parts[-1][:-1]
            piece = natural[i].lstrip(_PROP_SPACE)
            i += 1
            run = _trailing_backslashes(piece)
            trail = trail - 1 + run if run == len(piece) else run
            parts.append(piece)
        if trail % 2 == 1:
            parts[-1] = parts[-1][:-1]
        yield start + 1, "".join(parts)


def parse_properties(data: bytes) -> dict[str, str]:
    """A Java properties file (read as ISO-8859-1, as ``Properties.load(InputStream)`` does)."""
    props: dict[str, str] = {}
    for line_no, line in _logical_lines(bytes(data).decode("latin-1")):
        key, value = _split_property(line, line_no)
        props[key] = value
    return props


def parse_meta_properties(data: bytes, file_name: str = META_PROPERTIES_FILE) -> dict[str, Any]:
    """meta.properties by MetaProperties' rules.

    v0 (ZooKeeper era): ``broker_id`` and ``cluster_id`` optional. v1 (KRaft): ``node_id``
    and ``cluster_id`` required. ``directory_id`` (3.7+, JBOD) is optional and must be a
    Uuid. ``properties`` holds every key as written. Raises with Kafka's message otherwise.
    """
    props = parse_properties(data)
    raw_version = props.get("version", "0")
    version = java_int(raw_version.strip(" \t\n\x0b\f\r"))
    if version is None:
        raise InvalidFileError(f"Invalid meta.properties version string '{clip(raw_version)}'")
    if version not in (0, 1):
        raise InvalidFileError(f"Unknown meta.properties version number {version}")
    out: dict[str, Any] = {"version": version}
    id_key = "broker.id" if version == 0 else "node.id"
    if id_key in props:
        node = java_int(props[id_key])
        if node is None:
            raise InvalidFileError(f"Unable to read {id_key} as a base-10 number.")
        out[id_key.replace(".", "_")] = node
    elif version == 1:
        raise InvalidFileError("Failed to find node.id")
    else:
        out["broker_id"] = None
    out["cluster_id"] = props.get("cluster.id")
    if version == 1 and out["cluster_id"] is None:
        raise InvalidFileError("cluster.id was not found.")
    out["directory_id"] = props.get("directory.id")
    if out["directory_id"] is not None:
        try:
            parse_uuid(out["directory_id"])
        except InvalidFileError as e:
            raise InvalidFileError(f"Unable to read directory.id as a Uuid: {e.message}") from None
    out["properties"] = props
    return out


# -- JSON files --------------------------------------------------------------------------------

def _json_object(data: bytes, file_name: str) -> dict[str, Any]:
    try:
        value = json.loads(_text(data, file_name), parse_int=json_int)
    except json.JSONDecodeError as e:
        raise InvalidFileError(f"{file_name} is not valid JSON: {e.msg}", position=e.pos) from None
    except OverflowError as e:
        raise InvalidFileError(f"{file_name}: {e}", position=0) from None
    except RecursionError:
        raise InvalidFileError(f"{file_name}: JSON nested too deeply", position=0) from None
    if not isinstance(value, dict):
        raise InvalidFileError(f"{file_name} holds JSON {type(value).__name__}, not an object", position=0)
    return value


def parse_quorum_state(data: bytes, file_name: str = QUORUM_STATE_FILE) -> dict[str, Any]:
    """The KRaft ``quorum-state`` JSON (FileQuorumStateStore) as written, keys unchanged."""
    return _json_object(data, file_name)


def parse_clean_shutdown(data: bytes, file_name: str = CLEAN_SHUTDOWN_FILE) -> dict[str, Any]:
    """``{"version": int|None, "broker_epoch": int|None}``.

    Before KIP-966 the file was empty (its presence alone means "clean"): both are None.
    3.7 wrote ``{"version":0,"brokerEpoch":N}``; later brokers write
    ``{"version":"0","broker_epoch":"N"}`` (strings). All three are accepted.
    """
    if not bytes(data).strip():
        return {"version": None, "broker_epoch": None}
    obj = _json_object(data, file_name)
    out: dict[str, Any] = {}
    for name, keys in (("version", ("version",)), ("broker_epoch", ("brokerEpoch", "broker_epoch"))):
        raw = next((obj[k] for k in keys if k in obj), None)
        if raw is None:
            out[name] = None
            continue
        value = raw if isinstance(raw, int) and not isinstance(raw, bool) else \
            java_int(raw, INT64) if isinstance(raw, str) else None
        if value is None:
            raise InvalidFileError(f"{file_name}: {name} {raw!r} is not an integer", position=0)
        out[name] = value
    return out

