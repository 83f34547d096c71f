"""``_speedups.scan_plain_run`` (the scanner's C fast path) against the pure-Python scanner.

Each input is scanned twice: everything in Python (``kdump._accel.use(False)``) and
everything in C. The reports must be identical:
``to_dict()``, every ScanReport field (findings, cut, valid_bytes, counts, epochs, max
timestamp, transaction events, intact runs) and the scanner's own end state (the index
and time-index tracking, previous offset and epoch). Inputs: every fixture segment under
several settings, damaged copies of them (tests/support/damage.py), and hypothesis-built
segments with leader-epoch changes, timestamps going up and down, regressions, index
intervals of a few bytes, and transactional, control and legacy batches mixed in.
"""

from __future__ import annotations

import os
import random
import struct
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump import _accel  # noqa: E402

_speedups = _accel.built()
if _speedups is None:
    pytest.skip(f"C accelerator {_accel.unavailable}", allow_module_level=True)


from kdump.check import resync as resync_mod  # noqa: E402
from kdump.check import scan as scan_mod  # noqa: E402
from kdump.check import scan_runs as runs_mod  # noqa: E402
from kdump.check.broker_rule import DEFAULT_MAX_MESSAGE_SIZE  # noqa: E402
from kdump.check.scan import ScanReport, _Scan, scan_segment  # noqa: E402
from kdump.encode import build_control_batch, build_end_txn_marker, build_legacy_message, build_v2_batch  # noqa: E402
from kdump.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET  # noqa: E402
from kdump.format.codecs import DEFAULT_LIMITS  # noqa: E402
from kdump.format.crc import crc32c  # noqa: E402
from kdump.format.walk import Walker  # noqa: E402
from kdump.storage.names import filename_offset  # noqa: E402
from support.damage import FIXTURES, V2_FIELDS, flip_bit, garbage, set_base_offset, set_length, write_at  # noqa: E402
from support.run import fixture_logs  # noqa: E402

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1




LOGS = fixture_logs()


# -- running both paths -----------------------------------------------------------------------

class Counter:
    """scan_plain_run, counting the batches it takes (to prove the C path really ran)."""

    taken = 0

    def __call__(self, buf, pos, end, max_batches, hi, max_size, interval, epochs, state):
        out = _speedups.scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state)
        if out is not None:
            Counter.taken += out[1][6] - state[6]
        return out


class _Mode:
    """Everything in C (the walker's scan_v2 and decoder too), or everything in Python."""

    def __init__(self, use_c: bool, chunk: int | None = None, chunk_bytes: int | None = None) -> None:
        self.use_c, self.chunk, self.chunk_bytes = use_c, chunk, chunk_bytes

    def __enter__(self):
        self.saved = _accel._built, runs_mod.PLAIN_RUN_CHUNK, runs_mod.PLAIN_RUN_BYTES
        # the native module as it is, but for a scan_plain_run that counts what C takes
        _accel._built = type(sys)("native_counting")
        vars(_accel._built).update(vars(_speedups), scan_plain_run=Counter())
        self.was_on = _accel.use(self.use_c)
        if self.chunk is not None:
            runs_mod.PLAIN_RUN_CHUNK = self.chunk
        if self.chunk_bytes is not None:
            runs_mod.PLAIN_RUN_BYTES = self.chunk_bytes
        return self

    def __exit__(self, *exc) -> None:
        _accel._built, runs_mod.PLAIN_RUN_CHUNK, runs_mod.PLAIN_RUN_BYTES = self.saved
        _accel.use(self.was_on)


def strict(x):
    """Compares equal only if the types match too (True is not 1, a Batch is not a tuple)."""
    if isinstance(x, dict):
        return ("dict", sorted((k, strict(v)) for k, v in x.items()))
    if isinstance(x, (tuple, list, set, frozenset)):
        items = sorted(x) if isinstance(x, (set, frozenset)) else x
        return (type(x).__name__, [strict(i) for i in items])
    return (type(x).__name__, x)


def observe(buf, *, base_offset=None, deep=False, max_message_size=DEFAULT_MAX_MESSAGE_SIZE,
            index_interval_bytes=4096, resync=True):
    """All that one scan shows: the report through scan_segment, and _Scan's end state."""
    report = scan_segment(buf, base_offset=base_offset, deep=deep, max_message_size=max_message_size,
                          index_interval_bytes=index_interval_bytes, resync=resync)
    r2 = ScanReport(file=None, size=len(buf), base_offset=base_offset, deep=deep)
    s = _Scan(buf, r2, deep, max_message_size, index_interval_bytes, resync, DEFAULT_LIMITS)
    s.run()
    s.note_suppressed()
    assert vars(r2) == vars(report)
    st = s.step
    state = (st.valid, st.last_entry_at, st.index_last, st.time_last, st.max_ts, st.max_ts_offset, s.reach_base_at,
             s.prev_last, s.prev_epoch, s.base, s.kept_before, s.open_txns, s.counts)
    return (strict(report.to_dict()), strict(vars(report)), report.status, report.intact_bytes,
            report.next_offset, strict(state))


def both(buf, chunk: int | None = None, chunk_bytes: int | None = None, **options):
    with _Mode(use_c=False):
        pure = observe(buf, **options)
    with _Mode(use_c=True, chunk=chunk, chunk_bytes=chunk_bytes):
        fast = observe(buf, **options)
    assert fast == pure
    return pure


# -- every fixture ---------------------------------------------------------------------------

def _settings_for(name: str, buf: bytes):
    base = filename_offset(os.path.basename(name))
    out = [dict(base_offset=base), dict(base_offset=base, index_interval_bytes=0),
           dict(base_offset=None, index_interval_bytes=37), dict(base_offset=base, max_message_size=700),
           dict(base_offset=base + 5 if base is not None else 5, index_interval_bytes=1)]
    first = next(iter(Walker(buf)), None)
    if first is not None:
        # Intervals landing exactly on batch boundaries (the index step's "> interval" edge).
        out += [dict(base_offset=base, index_interval_bytes=k * first.size) for k in (1, 2, 3)]
    return out


@pytest.mark.parametrize("name", LOGS)
def test_fixture_scans_are_identical(name):
    buf = (FIXTURES / name).read_bytes()
    for options in _settings_for(name, buf):
        both(buf, **options)
    both(buf, chunk=1, base_offset=filename_offset(os.path.basename(name)), index_interval_bytes=100)
    both(buf, chunk_bytes=500, base_offset=filename_offset(os.path.basename(name)))


def test_the_c_path_takes_most_fixture_batches():
    """Guard against a C path that always declines (and so proves nothing)."""
    Counter.taken = 0
    total = 0
    for name in LOGS:
        buf = (FIXTURES / name).read_bytes()
        with _Mode(use_c=True):
            r = scan_segment(buf, base_offset=filename_offset(os.path.basename(name)))
        total += r.batches
    assert Counter.taken > total // 3, (Counter.taken, total)


def test_fixture_scan_files_identical_through_the_file_api():
    for name in LOGS[::25]:
        path = str(FIXTURES / name)
        with _Mode(use_c=False):
            pure = scan_mod.scan_file(path, base_offset=filename_offset(os.path.basename(name))).to_dict()
        with _Mode(use_c=True):
            fast = scan_mod.scan_file(path, base_offset=filename_offset(os.path.basename(name))).to_dict()
        assert fast == pure


# -- damaged fixtures ------------------------------------------------------------------------

DAMAGE_SOURCES = [
    "real/BiggerBrain__kafka/data/lsx1-0/00000000000000000000.log",
    "real/seanorth__kafka-server/kafka-logs/some-topic-0/00000000000000000000.log",
    "generated/transactions-0/00000000000000000000.log",
    "generated/compacted-0/00000000000000000000.log",
    "generated/log-append-time-0/00000000000000000000.log",
    "generated/mixed-codecs-v2-0/00000000000000000000.log",
    "generated/gzip-v1-0/00000000000000000000.log",
]
# The segment with the most v2 batches among the fixtures: long plain runs to damage.
_BIGGEST_V2 = max((n for n in LOGS), key=lambda n: sum(1 for b in Walker((FIXTURES / n).read_bytes())
                                                      if b.magic == 2))
DAMAGE_SOURCES.append(_BIGGEST_V2)


def _refresh_crc(buf: bytearray, pos: int) -> None:
    size = struct.unpack_from(">i", buf, pos + 8)[0] + 12
    struct.pack_into(">I", buf, pos + CRC_OFFSET, crc32c(bytes(buf[pos + ATTRIBUTES_OFFSET:pos + size])))


def _set_field(buf: bytearray, pos: int, field: str, value: int, fix_crc: bool = True) -> None:
    off, size = V2_FIELDS[field]
    fmt = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}[size]
    struct.pack_into(fmt, buf, pos + off, value)
    if fix_crc and off >= ATTRIBUTES_OFFSET:
        _refresh_crc(buf, pos)


def _damaged(data: bytes, seed: int):
    """Damaged copies of ``data``: (label, bytes), several per kind of damage."""
    rnd = random.Random(seed)
    bs = list(Walker(data))
    v2 = [b for b in bs if b.magic == 2 and b.position + b.size <= len(data)]
    picks = rnd.sample(v2, min(len(v2), 4)) if v2 else []
    for b in picks:
        p = b.position
        for field, value in (("partition_leader_epoch", b.partition_leader_epoch - 1),
                             ("partition_leader_epoch", b.partition_leader_epoch + 3),
                             ("max_timestamp", b.max_timestamp - 10_000), ("max_timestamp", b.max_timestamp + 10_000),
                             ("max_timestamp", -1), ("base_offset", b.base_offset - 2),
                             ("base_offset", b.base_offset + 1000), ("base_offset", INT64_MAX - 1),
                             ("last_offset_delta", -1), ("last_offset_delta", 1 << 30),
                             ("records_count", -1), ("records_count", (b.count or 0) + 5),
                             ("attributes", b.attributes | 0x10), ("attributes", b.attributes | 0x30),
                             ("attributes", (b.attributes & ~7) | 6), ("attributes", b.attributes | 0x08)):
            buf = bytearray(data)
            _set_field(buf, p, field, value)
            yield f"{field}={value}@{p}", bytes(buf)
        buf = bytearray(data)
        _set_field(buf, p, "max_timestamp", b.max_timestamp + 1, fix_crc=False)
        yield f"crc@{p}", bytes(buf)
        buf = bytearray(data)
        set_length(buf, p, b.size - 12 - 1)
        yield f"short-length@{p}", bytes(buf)
        buf = bytearray(data)
        set_length(buf, p, 1 << 30)
        yield f"huge-length@{p}", bytes(buf)
        buf = bytearray(data)
        set_length(buf, p, 20)
        yield f"tiny-length@{p}", bytes(buf)
        buf = bytearray(data)
        write_at(buf, p + 16, b"\x05")
        yield f"magic@{p}", bytes(buf)
        yield f"cut@{p + b.size // 2}", data[:p + b.size // 2]
        yield f"duplicated@{p}", data[:p + b.size] + data[p:]
        yield f"garbage-after@{p}", data[:p + b.size] + garbage(300, seed) + data[p + b.size:]
        yield f"zeros-after@{p}", data[:p + b.size] + bytes(100)
    for _ in range(6):
        buf = bytearray(data)
        if buf:
            flip_bit(buf, rnd.randrange(len(buf)), rnd.randrange(8))
        yield "flip", bytes(buf)
    if len(bs) > 2:
        # Offsets going backwards mid-segment with valid CRCs (base offset is not covered).
        buf = bytearray(data)
        b = bs[len(bs) // 2]
        set_base_offset(buf, b.position, 0)
        yield "regress-to-0", bytes(buf)
        last = bs[-1]
        yield "duplicate-last", data + data[last.position:last.position + last.size]
    yield "garbage-tail", data + garbage(200, seed)
    yield "zero-tail", data + bytes(4096)


@pytest.mark.parametrize("name", DAMAGE_SOURCES)
def test_damaged_fixture_scans_are_identical(name):
    data = (FIXTURES / name).read_bytes()
    base = filename_offset(os.path.basename(name))
    for label, buf in _damaged(data, seed=len(name)):
        for options in (dict(base_offset=base), dict(base_offset=base, index_interval_bytes=0),
                        dict(base_offset=None, index_interval_bytes=50, max_message_size=500)):
            try:
                both(buf, **options)
            except AssertionError:
                raise AssertionError(f"{name}: {label} {options}") from None


# -- hypothesis-built segments ---------------------------------------------------------------

_batch_spec = st.fixed_dictionaries({
    "kind": st.sampled_from(["plain"] * 8 + ["txn", "commit", "abort", "control", "legacy", "empty"]),
    "gap": st.sampled_from([1, 1, 1, 1, 2, 7, 0, -1, -5]),
    "n": st.integers(1, 3),
    "epoch": st.sampled_from(["same"] * 6 + ["up", "down", "neg"]),
    "ts": st.sampled_from(["up"] * 4 + ["down", "same", "far", "neg"]),
    "pid": st.sampled_from([1, 2]),
    "value": st.integers(0, 300),
    "odd": st.sampled_from([None] * 10 + ["count+", "count-", "delta-", "codec6", "crc", "lat"]),
})


def _build_segment(specs, start_offset: int) -> bytes:
    out = []
    offset, epoch, ts = start_offset, 0, 1_700_000_000_000
    for spec in specs:
        offset = max(offset + spec["gap"] - 1, 0)      # gap 1: contiguous; below: going back
        epoch = {"same": epoch, "up": epoch + 1, "down": max(epoch - 1, 0), "neg": -1}[spec["epoch"]] \
            if epoch >= 0 else 0
        ts = {"up": ts + 10, "down": ts - 100, "same": ts, "far": ts + 10**9, "neg": -1}[spec["ts"]] \
            if ts >= 0 else 1_700_000_000_000
        kind, n, pid = spec["kind"], spec["n"], spec["pid"]
        value = b"v" * spec["value"]
        if kind == "legacy":
            data = build_legacy_message(offset, b"k", value, magic=1, timestamp=max(ts, 0))
            n = 1
        elif kind in ("commit", "abort"):
            data = build_end_txn_marker(kind == "commit", base_offset=offset, producer_id=pid, producer_epoch=0,
                                        timestamp=ts, partition_leader_epoch=epoch)
            n = 1
        elif kind == "control":
            data = build_control_batch(2, b"\x00\x00", base_offset=offset, timestamp=ts, partition_leader_epoch=epoch)
            n = 1
        elif kind == "empty":
            data = build_v2_batch([], base_offset=offset, partition_leader_epoch=epoch, last_offset_delta=n - 1)
        else:
            odd = spec["odd"]
            recs = [(i, ts + i, b"k%d" % i, value) for i in range(n)]
            kw = dict(base_offset=offset, partition_leader_epoch=epoch, is_transactional=kind == "txn",
                      producer_id=pid if kind == "txn" else -1, producer_epoch=0 if kind == "txn" else -1)
            if odd == "count+":
                kw["records_count"] = n + 2
            elif odd == "count-":
                kw["records_count"] = -1
            elif odd == "delta-":
                kw["last_offset_delta"] = -1
            elif odd == "lat":
                kw["timestamp_type"] = 1
                kw["max_timestamp"] = ts + 5
            data = build_v2_batch(recs, **kw)
            if odd == "codec6":
                buf = bytearray(data)
                _set_field(buf, 0, "attributes", 6)
                data = bytes(buf)
            elif odd == "crc":
                buf = bytearray(data)
                buf[-1] ^= 1
                data = bytes(buf)
        out.append(data)
        offset += n
    return b"".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_batch_spec, min_size=1, max_size=40),
       st.sampled_from([0, 0, 100, 5000, INT64_MAX - 1000, (1 << 62)]),
       st.sampled_from(["first", "none", "below", "above", "huge"]),
       st.sampled_from([0, 1, 60, 150, 4096, 1 << 40, "exact", "exact"]),
       st.sampled_from([DEFAULT_MAX_MESSAGE_SIZE, 200, 61, 1 << 63]),
       st.sampled_from([None, None, "cut", "flip", "zeros", "garbage"]),
       st.integers(0, 1 << 30), st.sampled_from([None, 1, 2, 3]), st.sampled_from([None, None, 100, 700]))
def test_generated_segments_scan_identically(specs, start, base_mode, interval, max_size, damage, where, chunk,
                                             chunk_bytes):
    buf = _build_segment(specs, start)
    if damage == "cut":
        buf = buf[:where % (len(buf) + 1)]
    elif damage == "flip":
        b = bytearray(buf)
        flip_bit(b, where % len(b), where % 8)
        buf = bytes(b)
    elif damage == "zeros":
        buf += bytes(where % 200)
    elif damage == "garbage":
        at = where % (len(buf) + 1)
        buf = buf[:at] + garbage(where % 50 + 1, where) + buf[at:]
    base = {"first": start, "none": None, "below": max(start - 3, 0), "above": start + 2,
            "huge": (1 << 64) + 5}[base_mode]
    if interval == "exact":
        # A multiple of the first batch's size: steps land exactly on the "> interval" edge.
        first = next(iter(Walker(buf)), None)
        interval = (where % 3 + 1) * first.size if first is not None else 0
    both(buf, chunk=chunk, chunk_bytes=chunk_bytes, base_offset=base, index_interval_bytes=interval,
         max_message_size=max_size)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=3000), st.sampled_from([None, 0, 12]), st.sampled_from([0, 4096]))
def test_random_bytes_scan_identically(data, base, interval):
    both(data, base_offset=base, index_interval_bytes=interval)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
       st.integers(0, 5))
def test_mutated_segments_scan_identically(mutations, which):
    data = bytearray((FIXTURES / DAMAGE_SOURCES[which]).read_bytes())
    for pos, byte in mutations:
        data[pos % len(data)] = byte
    both(bytes(data), base_offset=0, index_interval_bytes=100)


# -- the function itself ---------------------------------------------------------------------

def _segment(n: int = 10, epoch_every: int = 0) -> bytes:
    return b"".join(build_v2_batch([(0, 1000 + i, b"k", b"v" * 50)], base_offset=i,
                                   partition_leader_epoch=(i // epoch_every if epoch_every else 0))
                    for i in range(n))


def _state(lo=0, valid=0, prev_epoch=0, index_last=None, time_last=None):
    return (valid, 0, lo, prev_epoch, -1, -1, 0, 0, index_last, time_last)


def test_plain_run_takes_plain_batches_and_stops_at_max():
    buf = _segment(10)
    size = len(buf) // 10
    epochs: list = []
    pos, state = _speedups.scan_plain_run(buf, size, len(buf), 3, INT32_MAX, 1 << 20, 1 << 40, epochs,
                                          _state(lo=0, valid=size))
    assert pos == 4 * size and state[6] == 3 and state[7] == 3 and state[2] == 3 and state[0] == 4 * size
    assert state[4] == 1003 and state[5] == 3 and epochs == []
    pos, state = _speedups.scan_plain_run(buf, pos, len(buf), 100, INT32_MAX, 1 << 20, 1 << 40, epochs, state)
    assert pos == len(buf) and state[6] == 9
    assert _speedups.scan_plain_run(buf, pos, len(buf), 100, INT32_MAX, 1 << 20, 1 << 40, epochs, state) is None


def test_plain_run_records_epochs_and_index_steps():
    buf = _segment(10, epoch_every=3)
    size = len(buf) // 10
    epochs = [(0, 0)]
    pos, state = _speedups.scan_plain_run(buf, size, len(buf), 100, INT32_MAX, 1 << 20, size, epochs,
                                          _state(lo=0, valid=size))
    assert pos == len(buf)
    assert epochs == [(0, 0), (1, 3), (2, 6), (3, 9)]
    assert state[3] == 3 and state[8] is not None and isinstance(state[9], tuple)


def test_plain_run_declines_what_python_must_judge():
    buf = _segment(4)
    size = len(buf) // 4
    args = (INT32_MAX, 1 << 20, 1 << 40)
    run = _speedups.scan_plain_run
    assert run(buf, size, len(buf), 10, *args, [], _state(lo=1)) is None            # offset not above lo
    assert run(buf, size, len(buf), 10, 0, 1 << 20, 1 << 40, [], _state(lo=0)) is None    # above hi
    assert run(buf, size, len(buf), 10, INT32_MAX, 61, 1 << 40, [], _state(lo=0)) is None  # too big
    assert run(buf, size, len(buf), 10, *args, [], _state(lo=0, prev_epoch=5)) is None  # epoch goes down
    assert run(buf, size, len(buf), 0, *args, [], _state(lo=0)) is None               # max_batches 0
    assert run(buf, size, size + 17, 10, *args, [], _state(lo=0)) is None             # too few bytes
    assert run(buf, size, len(buf) - 1, 10, *args, [], _state(lo=0))[0] == len(buf) - size  # torn last one
    # An irregular index step: the offset index already holds a larger offset.
    assert run(buf, size, len(buf), 10, INT32_MAX, 1 << 20, -1, [], _state(lo=0, index_last=50)) is None
    assert run(buf, size, len(buf), 10, INT32_MAX, 1 << 20, -1, [], _state(lo=0, time_last=(5, 99))) is None
    # Values beyond int64 anywhere in the state: all left to Python.
    assert run(buf, size, len(buf), 10, *args, [], _state(lo=-(1 << 70))) is None
    assert run(buf, size, len(buf), 10, -(1 << 70), 1 << 20, 1 << 40, [], _state(lo=0)) is None
    assert run(buf, size, len(buf), 10, *args, [(1 << 70, 0)], _state(lo=0)) is None
    assert run(buf, size, len(buf), 10, *args, [], _state(lo=0, time_last=(1, 2, 3))) is None
    assert run(buf, size, len(buf), 10, *args, [], _state(lo=0, index_last="x")) is None
    # Bounds beyond int64 above are exact once clamped.
    assert run(buf, size, len(buf), 10, 1 << 70, 1 << 70, 1 << 70, [], _state(lo=0))[0] == len(buf)
    assert run("not a buffer", 0, 100, 10, *args, [], _state()) is None
    assert run(buf, -5, len(buf), 10, *args, [], _state(lo=-10)) is None
    assert run(buf, len(buf) + 10, len(buf), 10, *args, [], _state()) is None


def test_plain_run_argument_errors():
    run = _speedups.scan_plain_run
    with pytest.raises(TypeError):
        run(b"", 0, 0, 1)
    with pytest.raises(TypeError):
        run(b"", 0, 0, 1, 0, 0, 0, (), _state())
    with pytest.raises(TypeError):
        run(b"", 0, 0, 1, 0, 0, 0, [], (0, 0))
    with pytest.raises(TypeError):
        run(b"", "0", 0, 1, 0, 0, 0, [], _state())


def test_plain_run_never_crashes_on_hostile_buffers():
    rnd = random.Random(11)
    seg = _segment(30, epoch_every=7)
    for i in range(3000):
        buf = bytearray(seg)
        for _ in range(rnd.randrange(1, 6)):
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        if i % 3 == 0:
            buf = buf[:rnd.randrange(len(buf))]
        end = rnd.choice([len(buf), len(buf) + 100, rnd.randrange(len(buf) + 1)])
        pos = rnd.choice([0, rnd.randrange(len(buf) + 1)])
        state = _state(lo=rnd.choice([-1, 0, 5, -(1 << 63)]), valid=rnd.randrange(1 << 20),
                       prev_epoch=rnd.choice([-1, 0, 3]), index_last=rnd.choice([None, 0, 10]),
                       time_last=rnd.choice([None, (0, 0), (1 << 62, 5)]))
        out = _speedups.scan_plain_run(bytes(buf), pos, end, 1000, rnd.choice([INT32_MAX, 1 << 70, 12]),
                                       rnd.choice([61, 1 << 20]), rnd.choice([0, 100, 1 << 40]), [], state)
        if out is not None:
            assert pos < out[0] <= min(end, len(buf))


def test_long_runs_with_epoch_changes():
    """Runs long enough for the C loop to let the GIL go, with epochs changing (and so the
    GIL taken back) inside them, and batches big enough for the CRC's own release."""
    small = _segment(4000, epoch_every=250)
    both(small, base_offset=0)
    both(small, base_offset=0, index_interval_bytes=0)
    big = b"".join(build_v2_batch([(0, 5000 + i, b"k", bytes(70_000))], base_offset=i,
                                  partition_leader_epoch=i // 3) for i in range(12))
    both(big, base_offset=0)
    both(big, base_offset=0, chunk_bytes=150_000)
    Counter.taken = 0
    with _Mode(use_c=True):
        r = scan_segment(small, base_offset=0)
    # (a named segment: C takes its first batch too)
    assert Counter.taken == 4000 and r.epochs == [(i, i * 250) for i in range(16)]


# -- the resync's candidate search -------------------------------------------------------------

def _candidate_by_definition(data: bytes, pos: int, end: int, top: int) -> int:
    """The first p in [pos, end - 9] with data[p] <= top and data[p + 8] <= 2, without a regex."""
    end = min(end, len(data))
    for p in range(max(pos, 0), end - 8):
        if data[p] <= top and data[p + 8] <= 2:
            return p
    return -1


# Every byte value can be drawn; the few that make candidates are drawn more often.
_ANY_BYTE = st.one_of(st.sampled_from([0, 1, 2, 3, 0x5C, 0x5D, 0x7F, 0x80, 0xFF]), st.integers(0, 255))


@settings(max_examples=400, deadline=None)
@given(data=st.lists(_ANY_BYTE, max_size=400).map(bytes),
       top=st.one_of(st.sampled_from([0x5B, 0x5C, 0x5D, 0x5E]), st.integers(0, 0x7F)),
       pos=st.integers(-3, 420), end=st.integers(-3, 420))
def test_find_candidate_is_the_regular_expression(data, top, pos, end):
    """The C search, the pattern Python falls back on and the definition find the same position
    (bounds 0x5C and 0x5D, which a regular expression must escape, among them)."""
    m = resync_mod._candidate_pattern(top).search(data, max(pos, 0), max(min(end, len(data)), 0))
    want = _candidate_by_definition(data, pos, end, top)
    assert (-1 if m is None else m.start()) == want
    assert m is None or m.end() == m.start() + 9
    assert _speedups.find_candidate(data, pos, end, top) == want


def test_every_bound_makes_the_pattern_it_means():
    data = bytes(range(256)) * 2 + bytes(9)
    for top in range(0x80):
        for pos in (0, 1, 0x5C, 0x5D, 0x100):
            want = _candidate_by_definition(data, pos, len(data), top)
            m = resync_mod._candidate_pattern(top).search(data, pos)
            assert (-1 if m is None else m.start()) == want == _speedups.find_candidate(data, pos, len(data), top)


@pytest.mark.parametrize("max_size", [0x5C000000, 0x5D000000, 0x5E000000])
def test_intact_beyond_is_found_by_both_paths_whatever_the_largest_size(max_size):
    """A segment with one corrupt batch: both paths find the intact batch past it."""
    buf = bytearray(b"".join(build_v2_batch([(0, 0, None, b"v%d" % i)], base_offset=i) for i in range(3)))
    second = next(iter(Walker(bytes(buf)))).size
    buf[2 * second - 1] ^= 0xFF         # the end of the second batch: a CRC mismatch
    found = []
    for use_c in (False, True):
        with _Mode(use_c=use_c):
            r = scan_segment(bytes(buf), base_offset=0, max_message_size=max_size)
        found.append([(f.kind, f.position) for f in r.findings])
    assert found[0] == found[1] and ("intact_beyond", 2 * second) in found[0], found


def test_find_candidate_on_random_bytes_and_zeros():
    rnd = random.Random(7)
    data = rnd.randbytes(1 << 16) + bytes(4096) + rnd.randbytes(1 << 12)
    for top in (0, 1, 0x7F):
        for pos in range(0, len(data), 997):
            m = resync_mod._candidate_pattern(top).search(data, pos, len(data))
            assert _speedups.find_candidate(data, pos, len(data), top) == (-1 if m is None else m.start())
    # An end past the buffer is clamped to it.
    m = resync_mod._candidate_pattern(0).search(data[:100])
    assert _speedups.find_candidate(memoryview(data)[:100], 0, 1 << 30, 0) == (-1 if m is None else m.start())
    with pytest.raises(TypeError):
        _speedups.find_candidate("text", 0, 10, 0)
