"""DumpLogSegments' text as each Kafka line prints it (``kdump dump --kafka-version LINE``).

kdump's text view is the newest line's. Every place where an older line printed otherwise is
one ``Rule`` below: the line that brought today's text, Kafka's change that made it, and what
the lines before it print. Code asks ``KafkaLine.has(RULE)``; nothing else names a version.
The rules were found by running each line's own DumpLogSegments on every shipped fixture
with every decoder option (tests/kafka/test_dls_versions.py keeps them equal).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Rule(NamedTuple):
    name: str
    since: str          # the first line that prints today's text
    change: str         # Kafka's change that made it
    before: str         # what the lines before ``since`` print instead


# The lines kdump prints as, oldest first; the newest is the default.
LINES = ("3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
NEWEST = LINES[-1]

# Kafka 4.3 rewrote DumpLogSegments in Java (kafka.tools -> org.apache.kafka.tools); the
# Scala tool of the lines before printed these otherwise.
_JAVA_PORT = "KAFKA-14579 (apache/kafka#21223: DumpLogSegments moved to tools, in Java)"

GAPS_EVERY_RECORD = Rule(
    "gaps-every-record", "4.3", _JAVA_PORT,
    "the --deep-iteration report leaves out the first record's gap (-1 is followed by N), lists the gaps "
    "newest first and keeps a previous offset's repeats")
LEGACY_CRC_NO_BRACE = Rule(
    "legacy-crc-no-brace", "4.3", _JAVA_PORT, "a legacy (v0/v1) record's line has a stray } after its crc")
SKIP_METADATA_PAYLOAD_PREFIX = Rule(
    "skip-metadata-payload-prefix", "4.3", _JAVA_PORT,
    "--skip-record-metadata: a record without a key prints ' payload: ...', not '| payload: ...'")
SNAPSHOT_NO_TRAILING_SPACE = Rule(
    "snapshot-no-trailing-space", "4.3", _JAVA_PORT,
    "a producer snapshot entry without batch metadata ends in a space after lastTimestamp")
TIME_INDEX_NOT_FOUND_NAMES_FILE = Rule(
    "time-index-not-found-names-file", "4.3", _JAVA_PORT,
    "a .timeindex's entries missing from the log come under 'The following indexed offsets are not found in "
    "the log.', which names no file")
LEADER_CHANGE_TEXT = Rule(
    "leader-change-text", "4.1", "KAFKA-19069 (apache/kafka#19729)",
    "a LEADER_CHANGE control record prints as controlType: LEADER_CHANGE(2)")
KRAFT_CONTROL_TEXT = Rule(
    "kraft-control-text", "3.8", "KIP-853 (KAFKA-16207, apache/kafka#15671)",
    "KRAFT_VERSION and KRAFT_VOTERS control records print as controlType: UNKNOWN(5) and UNKNOWN(6)")
TOOLS_API_DECODERS = Rule(
    "tools-api-decoders", "3.8", "KIP-1047 (KAFKA-16796, apache/kafka#16064)",
    "no org.apache.kafka.tools.api decoder classes: --key/--value-decoder-class naming one dies "
    "(ClassNotFoundException); kdump refuses it. From this line, a kafka.serializer class is taken for its "
    "successor with a line after each segment's 'Dumping' line: 'kafka.serializer.X is deprecated. Please use "
    "org.apache.kafka.tools.api.X instead' (the value's class, then the key's)")
KAFKA_SERIALIZER_GONE = Rule(
    "kafka-serializer-gone", "4.0", "KAFKA-14705 (apache/kafka#17420: KIP-1047's deprecated classes removed)",
    "kafka.serializer's Scala StringDecoder, IntegerDecoder and LongDecoder (kafka_2.13) as --key/--value-"
    "decoder-class; from 4.0 naming one dies (ClassNotFoundException) and kdump refuses it")
REMOTE_LOG_METADATA_DECODER = Rule(
    "remote-log-metadata-decoder", "3.9", "KAFKA-16228 (apache/kafka#16475)",
    "no --remote-log-metadata-decoder option (kafka-dump-log.sh rejects it; so does kdump)")
SHARE_GROUP_STATE_DECODER = Rule(
    "share-group-state-decoder", "4.0", "KIP-932 (KAFKA-17633, apache/kafka#17467)",
    "no --share-group-state-decoder option (kafka-dump-log.sh rejects it; so does kdump)")
OFFSETS_JSON = Rule(
    "offsets-json", "3.8", "KAFKA-16470 (apache/kafka#15652)",
    "--offsets-decoder: GroupMetadataManager.formatRecordKeyAndValue's text, offset_commit::group=G,partition=T-P "
    "and offset=N[,metadata=M], group_metadata::group=G and {protocolType, protocol, generationId, assignment: "
    "{member=[t-0, t-1]}}, unknown::version=N for the record types of KIP-848")
TRANSACTION_LOG_JSON = Rule(
    "transaction-log-json", "4.1", "KAFKA-18616 (apache/kafka#18688: one coordinator-record parser)",
    "--transaction-log-decoder: TransactionLog.formatRecordKeyAndValue's text, transaction_metadata::"
    "transactionalId=ID and producerId:P,producerEpoch:E,state=NAME,partitions=[t-0,...] (a Scala hash set's "
    "order),txnLastUpdateTimestamp=T,txnTimeoutMs=M")
TRANSACTION_STATUS_NAME = Rule(
    "transaction-status-name", "4.4", "KAFKA-20712 (apache/kafka#22615)",
    '--transaction-log-decoder: transactionStatus as its number (0), not the state name ("Empty"; an id '
    'TransactionState does not know prints as its number in quotes)')

RULES = (GAPS_EVERY_RECORD, LEGACY_CRC_NO_BRACE, SKIP_METADATA_PAYLOAD_PREFIX, SNAPSHOT_NO_TRAILING_SPACE,
         TIME_INDEX_NOT_FOUND_NAMES_FILE, LEADER_CHANGE_TEXT, KRAFT_CONTROL_TEXT, TOOLS_API_DECODERS,
         KAFKA_SERIALIZER_GONE, REMOTE_LOG_METADATA_DECODER, SHARE_GROUP_STATE_DECODER, OFFSETS_JSON,
         TRANSACTION_LOG_JSON, TRANSACTION_STATUS_NAME)
_OPTION_RULES = {"--remote-log-metadata-decoder": REMOTE_LOG_METADATA_DECODER,
                 "--share-group-state-decoder": SHARE_GROUP_STATE_DECODER}
# The rules that change a record's line as text.c draws it: a line without them is drawn in Python.
C_TEXT_RULES = (LEGACY_CRC_NO_BRACE, SKIP_METADATA_PAYLOAD_PREFIX, LEADER_CHANGE_TEXT, KRAFT_CONTROL_TEXT)


class SchemaRule(NamedTuple):
    """What an internal-topic record schema gained in a line (one decoder, parameterised by the line).

    ``what`` is a field path in the record's value (``assignedPartitions.assignmentEpochs``: a
    field of each element; a tagged field, which older classes skip), ``version N`` (a value
    version older classes fail on), ``type`` (a record type they do not know) or ``schema
    NAME`` (the value's layout changed: older classes read its bytes as message NAME of the
    topic's schema file, leftover bytes ignored, as Kafka's generated readers do). ``old_name``:
    the field was renamed in ``since``, the lines before print that name.
    """
    topic: str          # the decoder: offsets, cluster-metadata, share-group-state
    type: str           # the record type as DumpLogSegments names it (TOPIC_RECORD; a coordinator's id)
    what: str
    since: str
    change: str
    old_name: str | None = None


_MEASURED = "measured with the line's own DumpLogSegments (Kafka's change not traced)"
_ELR = "KIP-966 (eligible leader replicas)"
_JBOD = "KIP-858 (JBOD in KRaft)"
_CORDON = "KIP-1066 (cordoned log dirs)"
_SHARE = "KIP-932 (share groups)"
_SHARE_41 = ("KIP-932 (share groups), 4.1: ShareGroupMetadataValue.metadataHash, ShareGroupStatePartitionMetadataValue."
             "initializingTopics, snapshotEpoch int32 (uint16 before) and ShareSnapshotValue's timestamps")
SCHEMA_RULES = (
    SchemaRule("cluster-metadata", "REGISTER_BROKER_RECORD", "version 3", "3.7", _JBOD),
    SchemaRule("cluster-metadata", "REGISTER_BROKER_RECORD", "version 4", "4.3", _CORDON),
    SchemaRule("cluster-metadata", "PARTITION_RECORD", "version 2", "3.7", _JBOD),
    SchemaRule("cluster-metadata", "REGISTER_CONTROLLER_RECORD", "type", "3.7", "KIP-919 (controller registration)"),
    SchemaRule("cluster-metadata", "CLEAR_ELR_RECORD", "type", "4.0", _ELR),
    SchemaRule("cluster-metadata", "PARTITION_CHANGE_RECORD", "eligibleLeaderReplicas", "3.7", _ELR),
    SchemaRule("cluster-metadata", "PARTITION_CHANGE_RECORD", "lastKnownElr", "3.7", _ELR),
    SchemaRule("cluster-metadata", "PARTITION_CHANGE_RECORD", "lastKnownElr", "3.8", _ELR, "lastKnownELR"),
    SchemaRule("cluster-metadata", "BROKER_REGISTRATION_CHANGE_RECORD", "cordonedLogDirs", "4.3", _CORDON),
    SchemaRule("offsets", "1", "topicId", "4.1", _MEASURED),
    SchemaRule("offsets", "3", "metadataHash", "4.1", "KIP-1101 (group metadata hash)"),
    SchemaRule("offsets", "6", "assignmentTimestamp", "4.3", _MEASURED),
    SchemaRule("offsets", "12", "assignmentTimestamp", "4.3", _MEASURED),
    SchemaRule("offsets", "8", "assignedPartitions.assignmentEpochs", "4.3", _MEASURED),
    *(SchemaRule("offsets", str(t), "type", "4.0", _SHARE) for t in range(9, 16)),
    SchemaRule("offsets", "16", "type", "4.0", "KAFKA-18234 (apache/kafka#18173)"),
    *(SchemaRule("offsets", str(t), "type", "4.1", "KIP-1071 (streams groups)") for t in range(17, 24)),
    SchemaRule("share-group-state", "1", "deliveryCompleteCount", "4.2", _MEASURED),
    # Kafka 4.0's share-group records (its jars' message specs) before 4.1 reshaped them.
    SchemaRule("offsets", "11", "schema ShareGroupMetadataValue@4.0", "4.1", _SHARE_41),
    SchemaRule("offsets", "15", "schema ShareGroupStatePartitionMetadataValue@4.0", "4.1", _SHARE_41),
    SchemaRule("share-group-state", "0", "schema ShareSnapshotValue@4.0", "4.1", _SHARE_41),
    SchemaRule("share-group-state", "1", "schema ShareUpdateValue@4.0", "4.1", _SHARE_41),
)


class SchemaError(Exception):
    """A record this line's message classes cannot read (``text``: what DumpLogSegments says)."""

    def __init__(self, text: str, unknown_type: bool = False) -> None:
        super().__init__(text)
        self.text = text
        self.unknown_type = unknown_type


def _drop(data: Any, path: list[str], old_name: str | None) -> Any:
    if isinstance(data, list):
        return [_drop(x, path, old_name) for x in data]
    if not isinstance(data, dict) or path[0] not in data:
        return data
    if len(path) > 1:
        return {**data, path[0]: _drop(data[path[0]], path[1:], old_name)}
    if old_name is None:
        return {k: v for k, v in data.items() if k != path[0]}
    return {(old_name if k == path[0] else k): v for k, v in data.items()}


def _key(line: str) -> tuple[int, ...]:
    return tuple(int(p) for p in line.split("."))


class KafkaLine:
    """One Kafka minor line's DumpLogSegments text (``has``: does it print as ``rule`` says)."""

    def __init__(self, line: str = NEWEST) -> None:
        if line not in LINES:
            raise ValueError(f"Kafka {line}: kdump prints the text of Kafka {', '.join(LINES)}")
        self.line = line
        self._rules = frozenset(r.name for r in RULES if _key(line) >= _key(r.since))

    def has(self, rule: Rule) -> bool:
        return rule.name in self._rules

    def refused(self, options: dict[str, Any]) -> str | None:
        """Why this line's kafka-dump-log.sh refuses one of ``options`` (option -> its value: a
        flag, or a decoder class name), or None: an option, or a class, it does not have."""
        for option, value in options.items():
            rule = _OPTION_RULES.get(option)
            if isinstance(value, str):
                if value.startswith("kafka.serializer.") and self.has(KAFKA_SERIALIZER_GONE):
                    return (f"{option} {value}: Kafka {self.line}'s kafka-dump-log.sh has none (removed in "
                            f"{KAFKA_SERIALIZER_GONE.since}: {KAFKA_SERIALIZER_GONE.change}); "
                            f"org.apache.kafka.tools.api.{value.rsplit('.', 1)[1]} is its successor")
                rule = TOOLS_API_DECODERS if value.startswith("org.apache.kafka.tools.api.") else None
                option = f"{option} {value}"
            if value and rule is not None and not self.has(rule):
                return (f"{option}: Kafka {self.line}'s kafka-dump-log.sh has none "
                        f"(it came in {rule.since}: {rule.change})")
        return None

    def decoder_notices(self, key_class: str | None, value_class: str | None) -> tuple[str, ...]:
        """The lines this line's kafka-dump-log.sh prints after a segment's ``Dumping`` line for
        the --key/--value-decoder-class given (DumpLogSegments.convertDeprecatedDecoderClass,
        called for the value's class first)."""
        if not self.has(TOOLS_API_DECODERS):
            return ()
        return tuple(f"{c} is deprecated. Please use org.apache.kafka.tools.api.{c.rsplit('.', 1)[1]} instead"
                     for c in (value_class, key_class) if c is not None and c.startswith("kafka.serializer."))

    def schema_text(self, topic: str, rtype: str, version: int | None, data: Any) -> Any:
        """A decoded record value as this line's message classes print it: fields it does not
        know dropped, renamed ones under their old name; SchemaError where it cannot read it."""
        for r in SCHEMA_RULES:
            if r.topic != topic or r.type != rtype or _key(self.line) >= _key(r.since):
                continue
            if r.what == "type":
                raise SchemaError(rtype, unknown_type=True)
            if r.what.startswith("schema "):
                continue                    # read from the bytes: old_schema()
            if r.what.startswith("version "):
                if version is not None and version >= int(r.what.split()[1]):
                    raise SchemaError(f"version {version}")
                continue
            data = _drop(data, r.what.split("."), r.old_name)
        return data

    def old_schema(self, topic: str, rtype: str) -> str | None:
        """The message this line's classes read ``topic``'s ``rtype`` values as, where its
        layout has changed since (a ``schema NAME`` rule), else None (also where the line does not
        know the type at all: ``schema_text`` says so)."""
        rules = [r for r in SCHEMA_RULES if (r.topic, r.type) == (topic, rtype) and _key(self.line) < _key(r.since)]
        if any(r.what == "type" for r in rules):
            return None
        return next((r.what.split(" ", 1)[1] for r in rules if r.what.startswith("schema ")), None)

    @property
    def c_text(self) -> bool:
        """text.c draws this line's record lines (it knows the newest text only)."""
        return all(self.has(r) for r in C_TEXT_RULES)

    def __repr__(self) -> str:
        return f"KafkaLine({self.line!r})"


NEWEST_LINE = KafkaLine(NEWEST)
