"""The file-name rules of a log dir, written once (Kafka's ``LogFileUtils``).

A segment's files are named by its base offset, zero-padded to 20 digits, and a suffix:
``00000000000000000042.log`` and its ``.index``, ``.timeindex``, ``.txnindex``; a producer
snapshot likewise (``.snapshot``). The log cleaner and deletion append ``.cleaned``,
``.swap`` or ``.deleted`` to such a name. A KRaft snapshot is ``<end offset>-<epoch>.checkpoint``.
The side files' fixed names are defined beside their formats, which kdump/format holds
(``format.checkpoint``, ``format.metadata``); ``storage.logdir`` maps every name to a kind.
"""

from __future__ import annotations

import os
import re

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
TXNINDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX)   # one segment's files
DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX = ".deleted", ".cleaned", ".swap"
LEFTOVER_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
CORRUPT_INFIX = ".corrupt-"         # kdump's own: the bytes a repair cut from a segment, kept beside it

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"     # the KRaft bootstrap snapshot

_OFFSET_NAME = re.compile(r"^(\d+)\.")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint")


def offset_name(offset: int, suffix: str) -> str:
    """The name of a segment's file: ``offset_name(42, ".log")`` -> ``00000000000000000042.log``."""
    return f"{offset:020d}{suffix}"


def offset_path(directory: str, offset: int, suffix: str) -> str:
    """``offset_name`` in ``directory``: where a segment's other files are."""
    return os.path.join(directory, offset_name(offset, suffix))


def sibling(log_path: str, suffix: str) -> str:
    """Another file of the segment whose ``.log`` is ``log_path`` (``…/42.log`` -> ``…/42.index``)."""
    stem = log_path[: -len(LOG_SUFFIX)] if log_path.endswith(LOG_SUFFIX) else log_path
    return stem + suffix


def segment_stem(path: str) -> tuple[str, str | None]:
    """A segment file's path without its suffix, and the cleaner or deletion leftover suffix it
    carries: ``…/42.index`` -> (``…/42``, None), ``…/42.log.swap`` -> (``…/42``, ``.swap``)."""
    name, leftover = strip_leftover(path)
    return os.path.splitext(name)[0], leftover


def segment_file(stem: str, suffix: str, leftover: str | None = None) -> str:
    """The inverse of ``segment_stem``: (``…/42``, ``.index``, ``.swap``) -> ``…/42.index.swap``."""
    return stem + suffix + (leftover or "")


def filename_offset(name: str, suffix: str | None = None) -> int | None:
    """The base offset a segment-style name starts with (``00000000000000000042.log`` -> 42).
    With ``suffix``, only a name that is digits then exactly that suffix counts
    (``42.log`` yes, ``42.log.swap`` no)."""
    name = os.path.basename(name)
    if suffix is not None:
        stem = name[: -len(suffix)]
        return int(stem) if name.endswith(suffix) and stem.isdecimal() else None
    m = _OFFSET_NAME.match(name)
    return int(m.group(1)) if m else None


def snapshot_id(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a KRaft snapshot named ``<offset>-<epoch>.checkpoint``."""
    m = _SNAPSHOT_NAME.match(os.path.basename(name))
    return (int(m.group(1)), int(m.group(2))) if m else None


def strip_leftover(name: str) -> tuple[str, str | None]:
    """Split ``x.log.deleted`` into (``x.log``, ``.deleted``)."""
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return name, None


# What LocalLog.parseTopicPartitionName (Kafka 4.3.1, storage LocalLog.java:750-778) accepts
# as a folder name in a log dir; the -delete/-future/-stray forms must match these patterns
# (LocalLog.java:72-74), and RemoteIndexCache.DIR_NAME is skipped before it is asked.
_SUFFIXED_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(?:delete|future|stray)", re.DOTALL)
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"


def broker_rejects_dir(name: str) -> bool:
    """Would a broker's start throw on this folder in a log dir? ``LogManager.loadLogs`` asks
    ``parseTopicPartitionName`` of every folder (Kafka 4.1.2 LogManager.scala:459-464, the same
    in 4.3); its KafkaException ("... is not in the form of topic-partition ...") is not the
    IOException loadLogs catches, so the broker does not start at all."""
    from kdump.format.javanumber import java_int

    if name == REMOTE_INDEX_CACHE_DIR:
        return False
    if "-" not in name:
        return True
    suffixed = name.endswith(("-delete", "-future", "-stray"))
    if suffixed and not _SUFFIXED_DIR.fullmatch(name):
        return True
    base = name[:name.rindex(".")] if suffixed else name
    topic, _, number = base.rpartition("-")
    return not topic or not number or java_int(number) is None
