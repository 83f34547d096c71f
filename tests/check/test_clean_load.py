"""The clean-shutdown load rules (kdump.check.clean_load, kdump.check.loader_snapshots) on a
real broker-written segment; tests/kafka/test_clean_parity.py checks them against Kafka itself."""

from __future__ import annotations

import shutil

import pytest

from kdump.check.clean_load import LoadFailure, OffsetIndexView, read_next_offset, trim_to_valid_size
from kdump.check.loader_snapshots import remove_stray_snapshots, snapshots_at_load
from kdump.format.walk import Walker
from support.damage import FIXTURES
from support.run import run_kdump

PART = FIXTURES / "broker" / "all-shapes" / "codec-none-0"
LOG = PART / "00000000000000000000.log"
INDEX = PART / "00000000000000000000.index"


def _next(buf, index=None):
    return read_next_offset(bytes(buf), INDEX.read_bytes() if index is None else index, 0, "x.log")


def test_the_log_end_offset_of_an_intact_segment_is_its_last_batch_end():
    batches = list(Walker(LOG.read_bytes()))
    assert _next(LOG.read_bytes()) == batches[-1].last_offset + 1 == 120


def test_a_flipped_record_byte_is_not_seen_by_the_header_walk():
    buf = bytearray(LOG.read_bytes())
    buf[2000] ^= 0xFF
    assert _next(buf) == 120


def test_a_zero_tail_makes_the_load_fail_with_kafkas_text():
    with pytest.raises(LoadFailure) as e:
        _next(LOG.read_bytes() + bytes(3000))
    assert str(e.value) == ("CorruptRecordException: Found record size 0 smaller than minimum record overhead (14) "
                            "in file x.log.")
    assert e.value.position == LOG.stat().st_size


def test_a_torn_batch_at_the_last_index_entry_falls_back_to_the_base_offset():
    idx = OffsetIndexView(INDEX.read_bytes(), 0)
    position = idx.lookup(idx.last_offset())[1]
    batches = list(Walker(LOG.read_bytes()))
    at = next(b for b in batches if b.position == position)
    assert at is batches[-1] or at.last_offset == idx.last_offset()
    # torn inside the batch the index points at, and everything after it gone
    assert _next(LOG.read_bytes()[:position + at.size - 5]) == 0
    # torn after it: the last whole batch's end
    if at is not batches[-1]:
        assert _next(LOG.read_bytes()[:-5]) == batches[-2].last_offset + 1


def test_a_garbage_index_is_trusted():
    # a last entry past the data: the walk from its position finds nothing, the base is taken
    assert _next(LOG.read_bytes(), (5000).to_bytes(4, "big") + (10 ** 6).to_bytes(4, "big")) == 0
    # an empty index: the walk runs from byte 0
    assert _next(LOG.read_bytes(), b"") == 120


def test_partial_index_entries_are_trimmed():
    assert trim_to_valid_size(8 * 3 + 5, 8) == 24 and trim_to_valid_size(24, 8) == 24
    assert trim_to_valid_size(12 * 2 + 11, 12) == 24


def test_stray_snapshots_keep_only_the_latest_above_every_base():
    deleted: dict[int, str] = {}
    alive = {11813: True, 12456: True}
    remove_stray_snapshots(alive, [0], deleted)
    assert list(alive) == [12456] and list(deleted) == [11813]
    deleted.clear()
    alive = {5: True, 10: True, 20: True}
    remove_stray_snapshots(alive, [0, 10, 30], deleted)
    assert list(alive) == [10] and sorted(deleted) == [5, 20]


def test_snapshots_the_load_deletes():
    # clean: the stray one at the log end goes for the later stray, which is past the end
    fate = snapshots_at_load({120: True, 200: True}, [], [0], 0, 120, clean=True)
    assert sorted(fate.deleted) == [120, 200]
    fate = snapshots_at_load({120: True}, [], [0], 0, 120, clean=True)
    assert not fate.deleted
    # a recovery from segment 0 deletes every snapshot past its base
    fate = snapshots_at_load({50: True, 120: True}, [(0, 120, False)], [0], 0, 120, clean=False)
    assert sorted(fate.deleted) == [50, 120] and 120 in fate.written
    # the latest unreadable snapshot goes at reload, an earlier readable one stays
    fate = snapshots_at_load({10: True, 20: False}, [], [0, 10, 20], 0, 30, clean=True)
    assert sorted(fate.deleted) == [20]


def test_recover_keeps_what_the_broker_keeps_after_a_flipped_byte(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(PART.parent, d)
    log = d / PART.name / LOG.name
    buf = bytearray(log.read_bytes())
    buf[2000] ^= 0xFF
    log.write_bytes(bytes(buf))
    r = run_kdump("recover", "--json", d / PART.name)
    assert r.code == 1
    assert '"log_end_offset":120' in r.out and '"action":"quarantine"' not in r.out


def test_recover_says_the_broker_will_not_load_a_zero_tail(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(PART.parent, d)
    with open(d / PART.name / LOG.name, "ab") as f:
        f.write(bytes(3000))
    r = run_kdump("recover", d / PART.name)
    assert r.code == 1
    assert "the broker will not load partition codec-none-0: CorruptRecordException: Found record size 0" in r.out


def test_verify_says_what_the_broker_makes_of_a_clean_log_dir(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(PART.parent, d)
    log = d / PART.name / LOG.name
    buf = bytearray(log.read_bytes())
    buf[2000] ^= 0xFF
    log.write_bytes(bytes(buf))
    r = run_kdump("verify", d / PART.name)
    assert r.code == 1
    assert ("after a clean shutdown the broker recovers no segment of codec-none-0: it keeps the damage and serves "
            "it up to log end offset 120 (a crash recovery, or kdump recover --full, would remove 9424 bytes: "
            "offsets 0..119)") in r.err
    # Its indexes point at the batches the broker serves from the whole file: not damaged, and
    # recover notes no reader sent astray (after a crash recovery the entries would be past the end).
    assert f"{d / PART.name}/00000000000000000000.index: ok, 32 bytes" in r.out.splitlines()
    assert f"{d / PART.name}/00000000000000000000.timeindex: ok, 36 bytes" in r.out.splitlines()
    assert "astray" not in run_kdump("recover", d / PART.name).out
    (d / ".kafka_cleanshutdown").unlink()
    assert "index_past_end" in run_kdump("verify", d / PART.name).out
    (d / ".kafka_cleanshutdown").write_text("")
    before = {p.name: p.read_bytes() for p in (d / PART.name).iterdir()}
    r = run_kdump("verify", "--truncate", "--broker-cut", d / PART.name)
    assert r.code == 1 and {p.name: p.read_bytes() for p in (d / PART.name).iterdir()} == before
    r = run_kdump("verify", "--truncate", d / PART.name)       # plain --truncate keeps it too
    assert r.code == 1 and {p.name: p.read_bytes() for p in (d / PART.name).iterdir()} == before
    log.write_bytes(LOG.read_bytes() + bytes(3000))
    r = run_kdump("verify", d / PART.name)
    assert r.code == 1
    assert ("the broker will not load partition codec-none-0: CorruptRecordException: Found record size 0 smaller "
            f"than minimum record overhead (14) in file {log}.") in r.err


def test_verify_truncate_cuts_what_stops_a_clean_load(tmp_path):
    """A zero tail makes the clean load throw: the broker will not start on the partition, so
    --truncate cuts it (the bytes kept beside it), and the next verify is clean."""
    d = tmp_path / "logs"
    shutil.copytree(PART.parent, d)
    log = d / PART.name / LOG.name
    log.write_bytes(LOG.read_bytes() + bytes(3000))
    r = run_kdump("verify", "--truncate", d / PART.name)
    assert r.code == 1, r.err
    assert log.read_bytes() == LOG.read_bytes()
    assert (d / PART.name / f"{LOG.name}.corrupt-{LOG.stat().st_size}").read_bytes() == bytes(3000)
    assert run_kdump("verify", d / PART.name).code == 0
    # The summary says what the broker would have made of the partition as it was read, not
    # of the disk the cut left (in this process and in a -j worker alike).
    said = ("the broker would not have loaded partition codec-none-0 as it was: CorruptRecordException: Found "
            "record size 0 smaller than minimum record overhead (14) in file ")
    for jobs in ("1", "2"):
        log.write_bytes(LOG.read_bytes() + bytes(3000))
        r = run_kdump("verify", "--truncate", "-j", jobs, d)
        assert r.code == 1 and log.read_bytes() == LOG.read_bytes(), r.err
        assert said in r.err.splitlines()[-1] and "cut as a crash recovery cuts it" in r.err, r.err


def test_verify_says_a_trusted_garbage_index_moves_the_log_end(tmp_path):
    """Class 4 of the clean path: the broker trusts a garbage .index, reads log end offset 0 from
    it and deletes the snapshot at 120; verify says both (kdump recover plans the same)."""
    d = tmp_path / "logs"
    shutil.copytree(PART.parent, d)
    index = d / PART.name / "00000000000000000000.index"
    index.write_bytes(bytes(range(7, 7 + index.stat().st_size)))
    r = run_kdump("verify", "--format", "text", d / PART.name)
    assert r.code == 1
    assert ("after a clean shutdown the broker takes the log end offset of codec-none-0 from its index as it is: 0, "
            "where the log ends at 120 (readers are sent astray: offsets 0..119 are not served as written, and new "
            "appends reuse them); before it starts: kdump index --rebuild") in r.err
    assert ("  snapshot_deleted at offset 120: the broker's next load deletes this snapshot: the load "
            "(truncateAndReload to the log end offset 0): past offset 0") in r.out.splitlines()
    assert "log end offset 0," in run_kdump("recover", d / PART.name).out


def test_verify_names_a_stray_snapshot_the_load_deletes(tmp_path):
    d = tmp_path / "logs"
    shutil.copytree(FIXTURES / "broker" / "all-shapes", d)
    part = d / "rolled-0"
    shutil.copy(part / "00000000000000000096.snapshot", part / "00000000000000000100.snapshot")
    r = run_kdump("verify", "--format", "text", part)
    assert r.code == 0
    assert [line for line in r.out.splitlines() if "snapshot_" in line] == [
        "  snapshot_deleted at offset 100: the broker's next load deletes this snapshot: stray snapshot (no segment "
        "starts at 100; a later one, 240, is the latest stray)"]
    (d / ".kafka_cleanshutdown").unlink()       # the same after a crash
    assert [line for line in run_kdump("verify", "--format", "text", part).out.splitlines()
            if "snapshot_" in line] == [
        "  snapshot_deleted at offset 100: the broker's next load deletes this snapshot: stray snapshot (no segment "
        "starts at 100; a later one, 240, is the latest stray)"]
