"""The log dir's file-name rules (kdump.storage.names), stated as the names Kafka writes."""

from __future__ import annotations

import os

from kdump.storage.names import (
    LEFTOVER_SUFFIXES,
    SEGMENT_SUFFIXES,
    filename_offset,
    offset_name,
    offset_path,
    sibling,
    snapshot_id,
    strip_leftover,
)


def test_offset_names_are_twenty_digits_then_the_suffix():
    assert offset_name(0, ".log") == "00000000000000000000.log"
    assert offset_name(42, ".index") == "00000000000000000042.index"
    assert offset_name(9223372036854775807, ".snapshot") == "09223372036854775807.snapshot"
    assert offset_path("/d/t-0", 42, ".timeindex") == os.path.join("/d/t-0", "00000000000000000042.timeindex")
    assert SEGMENT_SUFFIXES == (".log", ".index", ".timeindex", ".txnindex")
    assert LEFTOVER_SUFFIXES == (".deleted", ".cleaned", ".swap")


def test_filename_offset_reads_the_leading_digits():
    assert filename_offset("/d/t-0/00000000000000000042.log") == 42
    assert filename_offset("00000000000000000042.log.swap") == 42
    assert filename_offset("42.index") == 42
    assert filename_offset("leader-epoch-checkpoint") is None
    assert filename_offset("broken.log") is None


def test_filename_offset_with_a_suffix_wants_exactly_digits_and_that_suffix():
    assert filename_offset("00000000000000000042.log", ".log") == 42
    assert filename_offset("00000000000000000042.snapshot", ".snapshot") == 42
    assert filename_offset("00000000000000000042.log.swap", ".log") is None
    assert filename_offset("00000000000000000042.index", ".log") is None
    assert filename_offset("x42.log", ".log") is None
    assert filename_offset(".log", ".log") is None


def test_sibling_swaps_the_log_suffix():
    assert sibling("/d/t-0/00000000000000000042.log", ".index") == "/d/t-0/00000000000000000042.index"
    assert sibling("/d/t-0/00000000000000000042.log", ".timeindex") == "/d/t-0/00000000000000000042.timeindex"


def test_leftovers_and_kraft_snapshots():
    assert strip_leftover("00000000000000000042.log.deleted") == ("00000000000000000042.log", ".deleted")
    assert strip_leftover("00000000000000000042.index.cleaned") == ("00000000000000000042.index", ".cleaned")
    assert strip_leftover("00000000000000000042.log") == ("00000000000000000042.log", None)
    assert snapshot_id("00000000000000000310-0000000001.checkpoint") == (310, 1)
    assert snapshot_id("bootstrap.checkpoint") is None


# -- partition dir names: the fast path agrees with the rule's regex --------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kdump.storage.logdir import _PARTITION_DIR, parse_partition_dir  # noqa: E402


def _by_regex(name: str):
    m = _PARTITION_DIR.match(name)
    return None if not m else (m.group("topic"), int(m.group("partition")), m.group("state"))


_PIECES = st.sampled_from(["-", "1", "0", "42", "a", "topic", ".", "\n", " ", "\u0661", "+",
                           ".0123456789abcdef0123456789abcdef-delete", "-stray", "x_y"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=6).map("".join))
def test_partition_dir_names_parse_as_the_regex_says(name):
    assert parse_partition_dir(name) == _by_regex(name)
