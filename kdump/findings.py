"""Every finding kind kdump emits, with its class and a one-line doc: the one registry.

A kind's class says what the state means for a broker starting on these bytes, decided by
what a real Kafka 4.3 broker does with it (``tests/kafka/test_recovery_parity.py`` and
``tests/kafka/test_broker_accepts.py`` keep that as tests):

damage
    data a broker would cut, delete or fail to load, or data lost to readers (a reader
    that cannot decode it, aborted records shown as committed). ``verify`` exits 1.
anomaly
    odd, but a broker takes the files as they are and readers get every record (an index
    entry naming an offset compaction removed, a checkpoint that lags the log). Reported,
    exit 0 unless ``verify --strict``.
info
    a normal state, or one the broker finishes at startup without losing data (leftover
    ``.cleaned``/``.swap``/``.deleted`` files, orphan indexes, a missing index it rebuilds);
    also what a salvage could save.
error
    the check could not complete (exit 3).

Emitters use the constants below (the decoding core's walk stops too), never a string of
their own: a test fails when a kind not declared here is emitted, and the man page and
docs/findings.md list this table.
"""

from __future__ import annotations

from typing import NamedTuple

from kdump.errors import ExitStatus

DAMAGE, ANOMALY, INFO, ERROR = "damage", "anomaly", "info", "error"
CLASSES = (DAMAGE, ANOMALY, INFO, ERROR)


class Kind(NamedTuple):
    name: str
    cls: str
    doc: str


KINDS: dict[str, Kind] = {}


def _declare(name: str, cls: str, doc: str) -> str:
    assert cls in CLASSES and name not in KINDS, name
    KINDS[name] = Kind(name, cls, doc)
    return name


# -- a segment's batches (kdump.check.scan); the broker's cut is one of the first eight -------------------
TORN_TAIL = _declare("torn_tail", DAMAGE, "the last batch runs past the end of the file (a write cut short): "
                                             "the broker cuts it")
TRAILING_BYTES = _declare("trailing_bytes", DAMAGE, "17 bytes or fewer after the last batch, not all zero: the broker "
                                            "cuts them")
ZERO_TAIL = _declare("zero_tail", DAMAGE, "everything from here on is zero bytes (a preallocated or unflushed "
                                          "tail): the broker cuts it")
INVALID_SIZE = _declare("invalid_size", DAMAGE, "a length below the minimum for the magic, or a corrupt length "
                                                   "running past the end; a v1 message too short for its timestamp")
OVERSIZE = _declare("oversize", DAMAGE, "a length above the maximum message size that runs past the end or fails "
                                        "the CRC")
INVALID_MAGIC = _declare("invalid_magic", DAMAGE, "magic not 0, 1 or 2 (kept by the broker if the CRC-32C is "
                                                     "valid, but no reader can decode it)")
CRC_MISMATCH = _declare("crc_mismatch", DAMAGE, "the stored CRC does not match (CRC-32C for v2, CRC-32 for v0/v1): "
                                                "the broker cuts the segment here")
INVALID_OFFSET = _declare("invalid_offset", DAMAGE, "rebuilding the index meets a non-increasing offset: the "
                                                    "broker's recovery empties the segment")
INVALID_BATCH = _declare("invalid_batch", DAMAGE, "a legacy message whose key/value framing does not parse")
OFFSET_REGRESSION = _declare("offset_regression", DAMAGE, "a batch's first offset is not above the previous "
                                                          "batch's last offset")
OFFSET_OVERFLOW = _declare("offset_overflow", DAMAGE, "last offset - segment base does not fit an int32: the broker "
                                                      "splits the segment (kdump does not)")
BASE_OFFSET_MISMATCH = _declare("base_offset_mismatch", DAMAGE, "a batch's first offset is below the segment's "
                                                                "base offset (its name)")
LAST_OFFSET_DELTA = _declare("last_offset_delta", DAMAGE, "lastOffsetDelta negative or below count - 1; legacy "
                                                          "inner offsets beyond the wrapper's")
CODEC = _declare("codec", DAMAGE, "an unknown compression id, or a payload that does not decompress")
RECORD_DECODE = _declare("record_decode", DAMAGE, "--deep: records do not decode, or their offsets leave the "
                                                  "batch's range")
RECORD_COUNT_LIMIT = _declare("record_count_limit", DAMAGE, "--deep: a batch declares more records than "
                                                            "--max-records-per-batch (by default more than Kafka "
                                                            "could have written); not decoded")
OVERSIZE_BATCH = _declare("oversize_batch", ANOMALY, "a batch with a valid CRC larger than --max-message-size: "
                                                     "the broker keeps it (a topic may allow it)")
EPOCH_REGRESSION = _declare("leader_epoch_regression", ANOMALY, "a batch's partition leader epoch is below the "
                                                                "previous batch's: the broker keeps both")
TIMESTAMP_OVERFLOW = _declare("timestamp_overflow", ANOMALY, "--deep: a record's baseTimestamp + timestampDelta "
                                                             "is past the int64 range: Kafka's long arithmetic wraps "
                                                             "it, and readers see (and kdump shows) the wrapped value")
INTACT_BEYOND = _declare("intact_beyond", INFO, "intact batches found past the cut: `kdump recover --salvage` "
                                                "can copy them out")
# Info findings that name data the next broker start deletes, and what can still save it:
# every view lists them (the other info findings, states the broker finishes, are counted).
ACTIONABLE = frozenset({INTACT_BEYOND})
UNSUPPORTED_CODEC = _declare("unsupported_codec", ERROR, "--deep: the codec library is missing; the check is "
                                                         "incomplete")
UNREADABLE = _declare("unreadable", ERROR, "the file could not be read")

# -- across the files of a partition (kdump.check.partition) ---------------------------------------------
OFFSET_OVERLAP = _declare("offset_overlap", ANOMALY, "a segment starts at or below the previous segment's last "
                                                     "offset (left by an interrupted clean): the broker loads both")
INDEX_MISSING = _declare("index_missing", INFO, "a segment has no .index/.timeindex: the broker rebuilds it")
TXNINDEX_MISSING = _declare("txnindex_missing", DAMAGE, "aborted transactions end in a segment without a "
                                                        ".txnindex: read_committed consumers see aborted records")
TXNINDEX_SIZE = _declare("txnindex_size", ANOMALY, "a partial entry at the end of a .txnindex: the broker reads "
                                                   "the whole entries and ignores it")
TXNINDEX_OFFSET = _declare("txnindex_offset", DAMAGE, "a .txnindex entry outside its segment")
TXNINDEX_ORDER = _declare("txnindex_order", DAMAGE, ".txnindex entries out of order")
TXNINDEX_PAST_END = _declare("txnindex_past_end", DAMAGE, "a .txnindex entry past the data kept")
TXNINDEX_MARKER = _declare("txnindex_marker", DAMAGE, "a .txnindex entry without its ABORT marker, or an ABORT "
                                                      "without its entry")
SNAPSHOT_CRC = _declare("snapshot_crc", ANOMALY, "producer snapshot CRC-32C mismatch: the broker reads only the "
                                                 "latest usable snapshot; one it needs it deletes, rebuilding "
                                                 "producer state from the log")
SNAPSHOT_INVALID = _declare("snapshot_invalid", ANOMALY, "producer snapshot does not parse (handled as snapshot_crc)")
SNAPSHOT_STALE = _declare("snapshot_stale", INFO, "a producer snapshot past the log end: the broker deletes it")
SNAPSHOT_DELETED = _declare("snapshot_deleted", INFO, "a producer snapshot the broker's next load deletes (stray, "
                                                      "passed by a segment's recovery, unreadable): it rebuilds "
                                                      "producer state from the log and the snapshots it keeps")
LEADER_EPOCH_INVALID = _declare("leader_epoch_invalid", DAMAGE, "leader-epoch-checkpoint does not parse: the "
                                                                "broker takes the log dir offline")
LEADER_EPOCH_ORDER = _declare("leader_epoch_order", ANOMALY, "leader-epoch-checkpoint entries out of order")
LEADER_EPOCH_MISMATCH = _declare("leader_epoch_mismatch", ANOMALY, "the leader-epoch-checkpoint disagrees with the "
                                                                   "epochs on the batches (lagging, or entries below "
                                                                   "the log start after a snapshot)")
LEADER_EPOCH_STALE = _declare("leader_epoch_stale", INFO, "leader epoch entries past the log end: the broker drops "
                                                          "them")
LOG_START_PAST_END = _declare("log_start_past_end", DAMAGE, "the log-start-offset checkpoint is above the log end: "
                                                            "the broker deletes every segment")
CHECKPOINT_INVALID = _declare("checkpoint_invalid", ANOMALY, "a recovery-point or log-start-offset checkpoint does "
                                                             "not parse: the broker falls back (recovers everything, "
                                                             "starts at the first segment)")
LOGDIR_FOREIGN_DIR = _declare("logdir_foreign_dir", DAMAGE, "a folder in a log dir whose name is not a "
                               "partition's (LocalLog.parseTopicPartitionName throws on it): the broker does not "
                               "start until it is moved out")
INVALID_FILE = _declare("invalid_file", DAMAGE, "another side file (checkpoint, metadata) does not parse")
LEFTOVER = _declare("leftover", INFO, "a .cleaned, .swap or .deleted file: the broker finishes it at startup")
LOG_MISSING = _declare("log_missing", ANOMALY, "a partition with indexes or producer snapshots but no .log (a copy "
                                               "that skipped *.log): its records are gone; the broker deletes the "
                                               "side files and starts the partition empty at its log start offset")
RECORDS_MISSING = _declare("records_missing", DAMAGE, "offsets the files show were written but no .log holds (a "
                                                    "segment's .log gone, an index, snapshot, leader-epoch entry or "
                                                    "checkpoint past the log end, a span between two segments): the "
                                                    "broker starts without them; the records are lost")
ORPHAN_INDEX = _declare("orphan_index", INFO, "an index with no segment: the broker deletes it at startup")

# -- index files against their log (kdump.check.indexes.forward_pass, kdump index) ----------------------------------
INDEX_PARTIAL = _declare("index_partial_entry", ANOMALY, "an .index size not a multiple of 8: the broker ignores "
                                                         "the torn slot")
INDEX_AFTER_TAIL = _declare("index_garbage_after_tail", DAMAGE, "a non-zero .index slot after the zero tail")
INDEX_BELOW_BASE = _declare("index_offset_below_base", DAMAGE, "an .index entry below the base offset, or a "
                                                               "negative position")
INDEX_ORDER = _declare("index_not_increasing", DAMAGE, ".index offsets or positions not increasing")
INDEX_PAST_END = _declare("index_past_end", DAMAGE, "an .index entry past the data kept")
INDEX_MID_BATCH = _declare("index_mid_batch", DAMAGE, "an .index position inside a batch")
INDEX_MISMATCH = _declare("index_offset_mismatch", DAMAGE, "an .index offset not in the batch it points at")
INDEX_GAP = _declare("index_offset_gap", ANOMALY, "an .index entry names an offset compaction removed: lookups "
                                                  "still land on a batch start")
INDEX_INTERVAL = _declare("index_interval", ANOMALY, ".index entries closer than the topic's index.interval.bytes "
                          "(--index-interval-bytes)")
INDEX_SANITY = _declare("index_sanity", DAMAGE, "OffsetIndex.sanityCheck fails")
TIME_PARTIAL = _declare("timeindex_partial_entry", ANOMALY, "a .timeindex size not a multiple of 12")
TIME_AFTER_TAIL = _declare("timeindex_garbage_after_tail", DAMAGE, "a non-zero .timeindex slot after the zero tail")
TIME_BELOW_BASE = _declare("timeindex_offset_below_base", DAMAGE, "a .timeindex offset below the base offset")
TIME_BACKWARDS = _declare("timeindex_backwards", DAMAGE, "a .timeindex timestamp below the previous entry's")
TIME_ORDER = _declare("timeindex_not_increasing", DAMAGE, "a .timeindex offset below the previous entry's")
TIME_NOT_FOUND = _declare("timeindex_offset_not_found", ANOMALY, "a .timeindex offset compaction removed")
TIME_PAST_END = _declare("timeindex_past_end", DAMAGE, "a .timeindex offset past the data kept")
TIME_NOT_MAX = _declare("timeindex_not_max", DAMAGE, "a .timeindex timestamp that is not the largest up to its "
                                                     "offset")
TIME_MISMATCH = _declare("timeindex_offset_mismatch", DAMAGE, "a .timeindex offset not where its timestamp is")
TIME_NO_FINAL = _declare("timeindex_missing_final_entry", ANOMALY, "the .timeindex lacks the entry a roll or close "
                                                                   "appends")
TIME_SANITY = _declare("timeindex_sanity", DAMAGE, "TimeIndex.sanityCheck fails")
TXN_PARTIAL = _declare("txnindex_partial_entry", ANOMALY, "`kdump index` on a .txnindex: a partial last entry "
                                                          "(the broker ignores it)")
TXN_VERSION = _declare("txnindex_version", DAMAGE, "`kdump index` on a .txnindex: an unknown entry version (the "
                                                   "broker fails to load the segment)")
TXN_SANITY = _declare("txnindex_sanity", INFO, "TransactionIndex.sanityCheck fails: the broker rebuilds it at "
                                               "startup")

# -- producer and transaction state rebuilt from the log (kdump.state.txn, kdump txn) ---------------
# `kdump txn` exits 1 for damage (anomalies too with --strict); the class says what a broker
# starting on the files makes of it.
TXN_SNAPSHOT_UNREADABLE = _declare("txn_snapshot_unreadable", ANOMALY, "`kdump txn`: a producer snapshot that cannot "
                                                                      "be read: the broker deletes it and rebuilds "
                                                                      "producer state from the log")
TXN_SNAPSHOT_MISMATCH = _declare("txn_snapshot_mismatch", ANOMALY, "`kdump txn`: a producer snapshot disagrees with "
                                                                  "the state replayed from the log before its offset")
TXN_INDEX_UNREADABLE = _declare("txn_index_unreadable", DAMAGE, "`kdump txn`: a .txnindex that cannot be read: "
                                                               "read_committed consumers lose its aborted "
                                                               "transactions")
TXN_INDEX_MISMATCH = _declare("txn_index_mismatch", DAMAGE, "`kdump txn`: a .txnindex entry missing, different, "
                                                           "or matching no ABORT marker: read_committed consumers "
                                                           "see aborted records or miss committed ones")
TXN_PRODUCER_INVALID = _declare("txn_producer_invalid", ANOMALY, "`kdump txn`: a batch the broker's append would "
                                                                "refuse (an older producer epoch, a non-transactional "
                                                                "write inside a transaction); recovery keeps it")
TXN_LOG_STOP = _declare("txn_log_stop", DAMAGE, "`kdump txn`: the log stops at damage; state is rebuilt from the "
                                               "data before it")

# -- an internal topic's records (dump's decoders, metadata, groups, txn; kdump.model.RecordFinding) ----
RECORD_UNKNOWN_SCHEMA = _declare("record_unknown_schema", DAMAGE, "a record of __consumer_offsets, "
                                 "__transaction_state, __cluster_metadata, __share_group_state or "
                                 "__remote_log_metadata whose record type or value version kdump has no schema for "
                                 "(a newer Kafka's, or damage): skipped, the rest of its batch read; the state "
                                 "shown lacks it")
TXN_COORDINATOR_MISMATCH = _declare("txn_coordinator_mismatch", ANOMALY, "`kdump txn`: a producer's epoch or open "
                                                                        "transaction disagrees with "
                                                                        "__transaction_state (a hanging transaction "
                                                                        "holds back the last stable offset)")

# -- Schema Registry payloads (kdump.schemas.check, verify --schemas) -------------------------------------
SCHEMA_UNKNOWN_ID = _declare("schema_unknown_id", DAMAGE, "`verify --schemas`: a record framed with a schema id "
                                                          "the schema store does not hold (never registered, or "
                                                          "permanently deleted): no consumer can decode it")
SCHEMA_DECODE = _declare("schema_decode", DAMAGE, "`verify --schemas`: a record that does not decode under its "
                                                  "schema (which byte, which field), or whose schema does not parse")
SCHEMA_BUDGET = _declare("schema_budget", ANOMALY, "`verify --schemas`: a record or a schema past one of the "
                                                  "schema decoders' budgets (nesting depth, items in one Avro "
                                                  "block, decoded output bytes (--decode-limit), named types, "
                                                  "regex time, a network or file $ref); that record is not "
                                                  "decoded, the rest are")
SCHEMA_INCOMPATIBLE = _declare("schema_incompatible", ANOMALY, "`verify --schemas`: a subject's version breaks the "
                                                               "subject's compatibility level under Schema "
                                                               "Registry's Avro, Protobuf or JSON Schema rules (it "
                                                               "would refuse it now): consumers on one version "
                                                               "may fail on the other's data")
SCHEMA_STORE_RECORD = _declare("schema_store_record", ANOMALY, "`verify --schemas`: a record of the _schemas "
                                                               "topic that is not Schema Registry's (skipped, as "
                                                               "the registry skips it)")

# -- tiered storage (KIP-405): remote segments against __remote_log_metadata (kdump.check.tiered) ----------
REMOTE_SEGMENT_MISSING = _declare("remote_segment_missing", DAMAGE, "a remote segment the metadata says is live "
                                  "(COPY_SEGMENT_FINISHED) has lost its .log or another of its files: its records "
                                  "are gone")
REMOTE_SEGMENT_SHORT = _declare("remote_segment_short", DAMAGE, "a live remote segment's .log is smaller than "
                                "segmentSizeInBytes or ends before its endOffset")
REMOTE_SEGMENT_CORRUPT = _declare("remote_segment_corrupt", DAMAGE, "a batch of a live remote segment fails its "
                                  "CRC or does not parse: a consumer fetching it gets an error")
REMOTE_ORPHAN = _declare("remote_orphan", ANOMALY, "remote files no metadata lists (or whose deletion finished): "
                         "RemoteLogManager never reads nor deletes them")
REMOTE_COPY_UNFINISHED = _declare("remote_copy_unfinished", INFO, "a COPY_SEGMENT_STARTED never finished (a failed "
                                  "upload); its files are not part of the log")
REMOTE_DELETE_UNFINISHED = _declare("remote_delete_unfinished", INFO, "a DELETE_SEGMENT_STARTED never finished; "
                                    "the segment is no longer part of the log")
REMOTE_GAP = _declare("remote_gap", DAMAGE, "offsets between two live remote segments, or between the remote "
                      "segments and the local log start, that no segment holds")
REMOTE_OVERLAP = _declare("remote_overlap", ANOMALY, "two live remote segments, or a remote and a local segment "
                          "that is not the same segment's copy, hold the same offsets (the log reads each once: "
                          "the later-starting segment's, the local log's from its start offset)")
REMOTE_DUPLICATE = _declare("remote_duplicate", INFO, "a second live upload of a remote segment's offsets that "
                            "RemoteLogManager would not read (it takes the one within the leader-epoch lineage, "
                            "then the last finished): left out of the log")
REMOTE_LINEAGE_MISMATCH = _declare("remote_lineage_mismatch", ANOMALY, "a live remote segment whose leader epochs "
                                   "disagree with the local leader-epoch-checkpoint: RemoteLogManager treats it as "
                                   "unreferenced (isRemoteSegmentWithinLeaderEpochs) and deletes it")
REMOTE_METADATA_INCOMPLETE = _declare("remote_metadata_incomplete", ANOMALY, "the __remote_log_metadata read is "
                                      "not whole (a partition read stopped early, or updates whose copy record is "
                                      "gone): the remote findings may be stale")
LOCAL_DELETED_SEGMENT = _declare("local_deleted_segment", INFO, "a *.log.deleted file: a local segment the broker "
                                 "scheduled for deletion (offloaded or past local retention), not part of the log")


# Kinds seen in this process that are not declared (a test asserts there are none).
undeclared: set[str] = set()


def class_of(kind: str) -> str:
    """The class of ``kind``; an undeclared kind counts as damage (and is remembered)."""
    k = KINDS.get(kind)
    if k is None:
        undeclared.add(kind)
        return DAMAGE
    return k.cls


def is_damage(kind: str) -> bool:
    return class_of(kind) == DAMAGE


def kind_of_error(e: Exception) -> str:
    """The finding kind of an error met while decoding a batch's records (as verify --deep
    names it): a codec library missing, the record-count limit, a payload that does not
    decompress, or records that do not decode."""
    from kdump.errors import CodecError, RecordCountLimitError, UnsupportedCodecError

    if isinstance(e, UnsupportedCodecError):
        return UNSUPPORTED_CODEC
    if isinstance(e, RecordCountLimitError):
        return RECORD_COUNT_LIMIT
    if isinstance(e, CodecError):
        return CODEC
    return RECORD_DECODE
# -- the exit status findings give (verify, index, txn, info --timeline) ----------------------

_STATUS_EXIT = {"ok": ExitStatus.OK, "unreadable": ExitStatus.INCOMPLETE}     # any other status: damage


def report_status(s: str, strict_findings=()) -> ExitStatus:
    """The exit status a file report's status gives; with --strict its anomalies count too."""
    status = _STATUS_EXIT.get(s, ExitStatus.DAMAGE)
    if status == ExitStatus.OK and any(f.cls == ANOMALY for f in strict_findings):
        return ExitStatus.DAMAGE
    return status


def findings_status(findings, strict: bool = False) -> ExitStatus:
    """The exit status a list of findings gives by their classes: damage 1, anomalies 1 only
    with --strict, info never (what ``index`` and ``txn`` report with)."""
    return classes_status((f.cls for f in findings), strict)


def classes_status(classes, strict: bool = False) -> ExitStatus:
    """``findings_status`` of findings given by their classes (``txn``'s are dicts)."""
    if any(c == DAMAGE or (strict and c == ANOMALY) for c in classes):
        return ExitStatus.DAMAGE
    return ExitStatus.OK
