"""Small helpers that damage a copy of a segment the way disks and crashes do (borg-style).

Every helper works on a path (a copy under tmp_path, never a file in fixtures/) or on a
bytearray, and returns what it changed so a test can state where the damage is.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import struct
from pathlib import Path

from kdump.check.broker_rule import index_bytes
from kdump.encode import build_v2_batch, encode_snapshot
from kdump.format.checkpoint import encode_leader_epochs
from kdump.format.walk import Walker
from kdump.model import Batch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

# v2 header fields: name -> (offset, size). CRC-32C covers attributes (21) onward.
V2_FIELDS = {
    "base_offset": (0, 8), "length": (8, 4), "partition_leader_epoch": (12, 4), "magic": (16, 1), "crc": (17, 4),
    "attributes": (21, 2), "last_offset_delta": (23, 4), "base_timestamp": (27, 8), "max_timestamp": (35, 8),
    "producer_id": (43, 8), "producer_epoch": (51, 2), "base_sequence": (53, 4), "records_count": (57, 4),
}
# v0/v1 message fields (after offset | size): CRC-32 covers magic onward.
LEGACY_FIELDS = {"offset": (0, 8), "length": (8, 4), "crc": (12, 4), "magic": (16, 1), "attributes": (17, 1)}
V2_CRC_COVERED = ("attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                  "producer_epoch", "base_sequence", "records_count", "crc")


def fixture(rel: str) -> Path:
    return FIXTURES / rel


def copy_tree(src: Path | str, dest: Path) -> Path:
    """Copy a fixture directory (or file) under ``dest``, writable, and return the copy."""
    src = Path(src)
    target = dest / src.name
    if src.is_dir():
        shutil.copytree(src, target)
    else:
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    for dirpath, dirnames, names in os.walk(target):
        for n in dirnames + names:
            p = os.path.join(dirpath, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(target, os.stat(target).st_mode | stat.S_IWUSR)
    return target


def batches(data: bytes | bytearray | Path | str) -> list[Batch]:
    if isinstance(data, (str, Path)):
        data = Path(data).read_bytes()
    return list(Walker(bytes(data)))


def flip_bit(target, pos: int, bit: int):
    """Flip bit ``bit`` (0 = least significant) of byte ``pos``; works on a path or a bytearray."""
    if isinstance(target, bytearray):
        target[pos] ^= 1 << bit
        return target
    with open(target, "r+b") as f:
        f.seek(pos)
        b = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([b ^ (1 << bit)]))
    return target


def write_at(target, pos: int, data: bytes):
    if isinstance(target, bytearray):
        target[pos:pos + len(data)] = data
        return target
    with open(target, "r+b") as f:
        f.seek(pos)
        f.write(data)
    return target


def set_length(target, batch_pos: int, length: int):
    """Overwrite the int32 length field of the entry at ``batch_pos``."""
    return write_at(target, batch_pos + 8, struct.pack(">i", length))


def set_base_offset(target, batch_pos: int, offset: int):
    return write_at(target, batch_pos, struct.pack(">q", offset))


def truncate_at(path, size: int) -> None:
    os.truncate(path, size)


def append_bytes(path, data: bytes) -> int:
    """Append ``data``; returns the old size (where the damage starts)."""
    old = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(data)
    return old


def garbage(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def append_garbage(path, n: int = 200, seed: int = 7) -> int:
    return append_bytes(path, garbage(n, seed))


def append_zeros(path, n: int = 4096) -> int:
    return append_bytes(path, bytes(n))


def duplicate_last_batch(path) -> int:
    data = Path(path).read_bytes()
    last = batches(data)[-1]
    return append_bytes(path, data[last.position:last.position + last.size])


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file below ``root`` (relative names): to prove nothing changed."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            st = os.stat(p)
            out[os.path.relpath(p, root)] = (Path(p).read_bytes(), st.st_mtime_ns)
    return out


def tree_bytes(root: Path, skip_dirs: tuple[str, ...] = ()) -> dict[str, bytes]:
    out = {}
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(skip_dirs)] if skip_dirs else dirnames
        for n in names:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


# -- an independent reference: LogSegment.recover transcribed from Kafka ---------------------

def kafka_recover(buf: bytes, base_offset: int, index_interval_bytes: int = 4096) -> int:
    """The byte count Kafka's ``LogSegment.recover`` keeps, written from the Java source alone
    (FileLogInputStream.nextBatch, ensureValid, ensureOffsetInRange, OffsetIndex.append,
    TimeIndex.maybeAppend, and LogLoader's truncateTo(baseOffset) on InvalidOffsetException).
    It does not use kdump's walker, only the two CRC functions. Offset overflow (a split in
    Kafka) is treated as no truncation.
    """
    from kdump.format.crc import crc32, crc32c

    end = len(buf)
    pos = 0
    valid = 0
    last_entry = 0
    index_last = None
    time_last = None          # (timestamp, offset)
    max_ts, max_ts_off = -1, -1
    lasts = []                # (position, lastOffset) of every batch read, for truncateTo

    class InvalidOffset(Exception):
        pass

    def time_append():
        nonlocal time_last
        if time_last is not None and max_ts_off < time_last[1]:
            raise InvalidOffset
        if max_ts > (time_last[0] if time_last else -1):
            time_last = (max_ts, max_ts_off)

    try:
        while True:
            if pos >= end - 17:                                   # nextBatch: null
                break
            offset, size = struct.unpack_from(">qi", buf, pos)
            magic = struct.unpack_from(">b", buf, pos + 16)[0]
            if size < 14:                                         # CorruptRecordException
                break
            if pos > end - 12 - size:                             # null: runs past the end
                break
            total = size + 12
            if magic < 2:                                         # LegacyRecord.ensureValid
                stored = struct.unpack_from(">I", buf, pos + 12)[0]
                if crc32(buf[pos + 16:pos + total]) != stored:
                    break
                last = offset
                ts = struct.unpack_from(">q", buf, pos + 18)[0] if magic == 1 and size >= 22 else -1
            else:                                                 # DefaultRecordBatch.ensureValid
                if total < 61:
                    break
                stored = struct.unpack_from(">I", buf, pos + 17)[0]
                if crc32c(buf[pos + 21:pos + total]) != stored:
                    break
                last = offset + struct.unpack_from(">i", buf, pos + 23)[0]
                ts = struct.unpack_from(">q", buf, pos + 35)[0]
            lasts.append((pos, last))
            if ts > max_ts:
                max_ts, max_ts_off = ts, last
            if valid - last_entry > index_interval_bytes:
                if index_last is not None and last <= index_last:
                    raise InvalidOffset
                index_last = last
                time_append()
                last_entry = valid
            valid += total
            pos += total
        if time_last is not None:
            time_append()
    except InvalidOffset:
        # truncateTo(baseOffset): the first batch whose last offset >= base, from the start.
        for p, last in lasts:
            if last >= base_offset:
                return p
        return end
    return valid


# -- running the CLI in-process: the suite's one helper ------------------------------------

from support.run import Result, run_kdump  # noqa: E402,F401

# -- partitions and crashes shared by the repair, recover, lock and hostile-dir tests --------------

T0 = 1700000000000


def partition_batch(base: int, n: int = 3, epoch: int = 0) -> bytes:
    return build_v2_batch([(i, T0 + base + i, b"k%d" % (base + i), b"v" * 40) for i in range(n)],
                          base_offset=base, partition_leader_epoch=epoch)


def make_partition(root: Path, name: str = "orders-0", epochs=((0, 0), (1, 12), (2, 20))) -> Path:
    """Three segments (0, 9, 18) of three 3-record batches; epochs change at 12 and 20."""
    d = root / name
    d.mkdir(parents=True)
    epoch_at = lambda off: max(e for e, start in epochs if start <= off)  # noqa: E731
    for base in (0, 9, 18):
        log = d / f"{base:020d}.log"
        log.write_bytes(b"".join(partition_batch(o, epoch=epoch_at(o)) for o in range(base, base + 9, 3)))
        index, timeindex = index_bytes(str(log), base)     # as recovery writes them (interval 4096)
        (d / f"{base:020d}.index").write_bytes(index)
        (d / f"{base:020d}.timeindex").write_bytes(timeindex)
        if base:        # a broker writes none at 0 (ProducerStateManager.takeSnapshot), and would delete one
            (d / f"{base:020d}.snapshot").write_bytes(encode_snapshot([]))
    (d / f"{27:020d}.snapshot").write_bytes(encode_snapshot([]))
    (d / "leader-epoch-checkpoint").write_bytes(encode_leader_epochs(epochs))
    return d


def damage_middle(d: Path) -> tuple[Path, int]:
    """A bad CRC in the second batch of segment 9; returns the segment and where the broker cuts."""
    log = d / f"{9:020d}.log"
    b = batches(log)[1]
    flip_bit(log, b.position + b.size - 1, 0)
    return log, b.position


def tree_and_quarantine(d: Path, q: Path) -> tuple[dict, dict]:
    return tree_bytes(d), tree_bytes(q) if q.exists() else {}


def messy_partition(root: Path) -> Path:
    d = make_partition(root)
    damage_middle(d)
    # An interrupted cleaner swap of segment 0 (offsets 0..5 survive), and other leftovers.
    swap = d / f"{0:020d}.log.swap"
    swap.write_bytes(partition_batch(0) + partition_batch(3))
    (d / f"{0:020d}.index.swap").write_bytes(index_bytes(str(swap), 0, 10)[0])
    (d / f"{9:020d}.timeindex.cleaned").write_bytes(b"x" * 12)
    (d / f"{0:020d}.log.deleted").write_bytes(b"old")
    (d / f"{60:020d}.index").write_bytes(b"")
    return d


def assert_nothing_lost(log: Path, original: bytes) -> None:
    kept = log.read_bytes()
    assert original.startswith(kept)
    saved = [p.read_bytes() for p in sorted(p for p in log.parent.iterdir() if ".corrupt-" in p.name)]
    assert saved and saved[0] == original[len(kept):] or kept == original


# The calls after which another process could see a different directory (fsync and chmod
# change nothing a restarted run can observe after a kill, as opposed to a power loss).
MUTATING = ("write", "replace", "rename", "ftruncate", "truncate", "unlink", "mkdir", "makedirs")


def run_killed_at(n: int, args: list[str]) -> int:
    """Run ``kdump ARGS`` in a forked child that dies (os._exit, no cleanup) at its n-th
    file-system change; returns the child's exit code (99 = killed)."""
    pid = os.fork()
    if pid == 0:     # pragma: no cover - the child
        try:
            count = [0]

            def wrap(orig):
                def call(*a, **k):
                    count[0] += 1
                    if count[0] == n:
                        os._exit(99)
                    return orig(*a, **k)
                return call

            import builtins
            for name in MUTATING:
                if hasattr(os, name):
                    setattr(os, name, wrap(getattr(os, name)))
            real_os_open = os.open

            def os_open(path, flags, *a, **k):
                if flags & os.O_CREAT:
                    count[0] += 1
                    if count[0] == n:
                        os._exit(99)
                return real_os_open(path, flags, *a, **k)
            os.open = os_open
            real_open = builtins.open

            def guarded_open(file, mode="r", *a, **k):
                if any(c in mode for c in "wax+"):
                    count[0] += 1
                    if count[0] == n:
                        os._exit(99)
                return real_open(file, mode, *a, **k)
            builtins.open = guarded_open
            code = run_kdump(*args).code
        except BaseException:
            os._exit(98)
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env
