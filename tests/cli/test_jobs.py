"""``-j/--jobs``: partitions spread over worker processes, the output that of ``-j 1``.

Every whole-log-dir command is run over the whole fixture tree at ``-j 1`` and ``-j 2``
(in every output format): stdout must be the same bytes and the exit status the same.
Repairs (``verify --truncate``, ``recover --apply``) on copies with several damaged
partitions must leave the same tree. A parallel run interrupted with SIGINT exits 130
and leaves no worker process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kdump import encode as build  # noqa: E402
from kdump.jobs.fanout import ordered_map  # noqa: E402
from support.damage import FIXTURES, append_garbage, batches, copy_tree, flip_bit, tree_bytes  # noqa: E402
from support.run import run_kdump, write_segment  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TREE = [str(FIXTURES / "generated"), str(FIXTURES / "real")]
FORMATS = ("json", "text", "table")

COMMANDS = {
    "verify": ["verify", *TREE],
    "verify-deep": ["verify", "--deep", *TREE],
    "info": ["info", *TREE],
    "index": ["index", *TREE],
    "index-verify": ["index", "--verify", *TREE],
    "timeindex-verify": ["timeindex", "--verify", *TREE],
    "dump": ["dump", *TREE],
    "dump-records": ["dump", "--records", "--data", *TREE],
    "recover": ["recover", str(FIXTURES / "generated")],
    # main's exit rules and flood control, DumpLogSegments' closing report (stderr) over broker-written dirs
    "verify-strict-problems": ["verify", "--strict", "--problems", *TREE, str(FIXTURES / "broker")],
    "dump-broker": ["dump", "--records", "--data", str(FIXTURES / "broker")],
    "recover-broker": ["recover", str(FIXTURES / "broker" / "all-shapes"), str(FIXTURES / "broker" / "cleaner-crash")],
}


def _logdirs_under(root: Path) -> list[str]:
    """The directories under ``root`` holding partition dirs (what ``recover`` takes)."""
    out = set()
    for log in root.rglob("*.log"):
        out.add(str(log.parent.parent))
    return sorted(out)


# Rich tables of every record of the whole tree take minutes: tables of dumps on a few partitions.
SMALL = [str(FIXTURES / "generated" / name) for name in ("transactions-0", "torn-tail-0", "compacted-0")]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_same_stdout_and_status_at_j1_and_j2(name, fmt, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    args = [*COMMANDS[name], "--format", fmt]
    if fmt == "table" and args[0] in ("dump", "index", "timeindex"):
        args = [a for a in args if a not in TREE] + SMALL
    one = run_kdump(*args, "-j", "1")
    two = run_kdump(*args, "-j", "2")
    assert one.out, "the command printed nothing: the comparison would prove nothing"
    assert two.code == one.code
    assert two.out == one.out
    assert two.err == one.err


def test_recover_plans_of_every_real_log_dir_are_the_same_at_j2():
    dirs = _logdirs_under(FIXTURES / "real")
    assert len(dirs) > 5
    one = run_kdump("recover", "--json", "-j", "1", *dirs)
    two = run_kdump("recover", "--json", "-j", "2", *dirs)
    assert (two.code, two.out, two.err) == (one.code, one.out, one.err)
    assert one.out.count('"action":"summary"') > 5


def test_export_writes_the_same_files_at_j2(tmp_path):
    for fmt, partition_by in (("ndjson", "topic,partition"), ("ndjson", "topic"), ("ndjson", ""),
                              ("parquet", "topic,partition")):
        if True:
            outs = []
            for jobs in ("1", "2"):
                out = tmp_path / f"{fmt}-{partition_by or 'none'}-{jobs}"
                r = run_kdump("export", *TREE, "--out", out, "--format", fmt, "--partition-by", partition_by,
                              "-j", jobs, "-q")
                assert r.code == 1          # the torn tail is an error row
                outs.append(tree_bytes(out))
            assert outs[0] == outs[1]
            assert len(outs[0]) >= 1


def test_export_jobs_is_for_the_local_engine(tmp_path):
    r = run_kdump("export", TREE[0], "--out", tmp_path / "o", "--engine", "spark", "-j", "2")
    assert r.code == 2
    assert "--jobs applies to --engine local only" in r.err


# -- repairs --------------------------------------------------------------------------------------

DAMAGED = ("mixed-codecs-v2-0", "zstd-v2-0", "gzip-v2-0", "headers-0", "compacted-0", "snappy-xerial-v2-0")


def _damaged_logdir(root: Path) -> Path:
    """A log dir copy with six damaged partitions (bad CRCs mid-segment, garbage tails) and some intact."""
    logdir = root / "logdir"
    for name in (*DAMAGED, "transactions-0", "idempotent-0", "torn-tail-0"):
        copy_tree(FIXTURES / "generated" / name, logdir)
    for i, name in enumerate(DAMAGED):
        log = sorted((logdir / name).glob("*.log"))[0]
        if i % 2:
            append_garbage(log, 300 + i, seed=i)
        else:
            bs = batches(log)
            flip_bit(log, bs[len(bs) // 2].position + 40, i)
    return logdir


def _stamp(text: str) -> str:
    """The two runs' quarantine directories are named by the second each ran in."""
    import re

    return re.sub(r"kdump-quarantine-\d{8}T\d{6}Z", "kdump-quarantine-STAMP", text)


def _same_runs(tmp_path: Path, *args: str) -> tuple:
    results, trees = [], []
    for jobs in ("1", "2"):
        logdir = _damaged_logdir(tmp_path / f"j{jobs}")
        r = run_kdump(*[a.replace("LOGDIR", str(logdir)) for a in args], "-j", jobs)
        results.append((r.code, _stamp(r.out.replace(str(logdir), "LOGDIR")),
                        _stamp(r.err.replace(str(logdir), "LOGDIR"))))
        trees.append({_stamp(k): v for k, v in tree_bytes(logdir).items()})
    assert results[0] == results[1]
    assert trees[0] == trees[1]
    return results[0], trees[0]


def test_verify_truncate_repairs_the_same_at_j2(tmp_path):
    (code, out, err), tree = _same_runs(tmp_path, "verify", "--truncate", "--json", "LOGDIR")
    assert code == 1
    assert err.count("kdump: truncated ") >= len(DAMAGED) - 1
    assert any(".corrupt-" in name for name in tree)


def test_recover_apply_does_the_same_at_j2(tmp_path):
    (code, out, err), tree = _same_runs(tmp_path, "recover", "--apply", "--yes", "--full", "--json",
                                        "--quarantine", str(tmp_path / "q"), "LOGDIR")
    assert code == 1
    assert out.count('"action":"truncate"') >= len(DAMAGED) - 1
    again = _damaged_logdir(tmp_path / "again")
    run_kdump("recover", "--apply", "--yes", "--full", "--quarantine", str(tmp_path / "q2"), again, "-j", "2")
    assert run_kdump("verify", "-q", again, "-j", "2").code == 0


def test_verify_truncate_quarantines_and_respects_locks_the_same_at_j2(tmp_path):
    """A cut in a first segment quarantines the later one; a partition another run holds
    locked is reported (exit 3) and left alone: the same at -j 1 and -j 2."""
    import fcntl
    import re

    from kdump.storage.writelock import LOCK_NAME

    def stamped(text: str) -> str:
        return re.sub(r"kdump-quarantine-[0-9TZ]+", "kdump-quarantine-T", text)

    results, trees = [], []
    for jobs in ("1", "2"):
        logdir = tmp_path / f"j{jobs}" / "logdir"
        for name in ("zstd-v2-0", "torn-tail-0", "transactions-0"):
            copy_tree(FIXTURES / "generated" / name, logdir)
        held = copy_tree(FIXTURES / "generated" / "gzip-v2-0", logdir)
        for partition in (logdir / "zstd-v2-0", held):
            append_garbage(sorted(partition.glob("*.log"))[0], 200, seed=1)
        fd = os.open(held / LOCK_NAME, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            r = run_kdump("verify", "--truncate", logdir, "-j", jobs)
        finally:
            os.close(fd)
        results.append((r.code, r.out.replace(str(logdir), "L"), stamped(r.err.replace(str(logdir), "L"))))
        trees.append({stamped(k): v for k, v in tree_bytes(logdir).items()})
    assert results[0] == results[1]
    assert trees[0] == trees[1]
    code, _, err = results[0]
    assert code == 3
    assert "L/gzip-v2-0: another kdump run is writing to this partition" in err
    assert "kdump-quarantine-T" in err and "kdump: truncated L/zstd-v2-0/" in err
    assert not any(k.startswith("gzip-v2-0/") and ".corrupt-" in k for k in trees[0])


# -- the pool -------------------------------------------------------------------------------------

def _square_or_fail(n):
    if n == 37:
        raise ValueError("thirty-seven")
    return n * n


def test_ordered_map_keeps_order_and_raises_where_the_unit_is():
    got = []
    with pytest.raises(ValueError, match="thirty-seven"):
        for v in ordered_map(_square_or_fail, range(100), 3):
            got.append(v)
    assert got == [n * n for n in range(37)]
    assert list(ordered_map(_square_or_fail, range(30), 2)) == [n * n for n in range(30)]


def _squares_merged(units):
    """A ranged function: the squares of a run of units as one merged result, and the error
    of the unit that failed (the units before it still count)."""
    out = []
    for n in units:
        if n == 37:
            return ([out] if out else []), ValueError("thirty-seven")
        out.append(n * n)
    return [out], None


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_ranged_ordered_map_merges_runs_and_raises_where_the_unit_is(jobs):
    got = []
    with pytest.raises(ValueError, match="thirty-seven"):
        for run in ordered_map(_squares_merged, range(100), jobs, ranged=True):
            got += run
    assert got == [n * n for n in range(37)]
    runs = list(ordered_map(_squares_merged, range(38, 438), jobs, ranged=True))
    assert [v for run in runs for v in run] == [n * n for n in range(38, 438)]
    if jobs > 1:
        assert len(runs) < 200      # merged: one result per range, not per unit


def _fail_on_dir(name):
    from kdump.check import load_fates

    real = load_fates.verify_directory

    def verify_directory(directory, files, opts):
        if os.path.basename(directory) == name:
            raise RuntimeError(f"boom in {name}")
        return real(directory, files, opts)
    return verify_directory


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_partition_whose_check_fails_ends_the_output_where_j1_does(fmt, tmp_path, monkeypatch):
    """Workers render a range of partitions at once: one whose check raises still ends the
    output after the partitions before it, as at -j 1, however the ranges fall."""
    import io

    from kdump.check import load_fates
    from kdump.render.output import Output
    from kdump.run.verify import run_verify

    for p in range(60):
        write_segment(tmp_path / f"t-{p}", [build.build_v2_batch([(0, 0, b"k", b"v")], base_offset=0)])
    monkeypatch.setenv("KDUMP_NO_PROGRESS", "1")
    monkeypatch.setattr(load_fates, "verify_directory", _fail_on_dir("t-41"))
    outs = []
    for jobs in (1, 2):
        stream = io.StringIO()
        with pytest.raises(RuntimeError, match="boom in t-41"):
            run_verify([str(tmp_path)], Output(False, fmt, stream=stream), jobs=jobs)
        outs.append(stream.getvalue())
    assert outs[0] == outs[1]
    assert "t-40/" in outs[0] and "t-41/" not in outs[0]


def _slow_pid(n):
    time.sleep(0.002)
    return n, os.getpid()


def test_the_parent_is_one_of_the_jobs():
    """With -j N, N-1 workers are forked and this process runs ranges too while it waits."""
    got = list(ordered_map(_slow_pid, range(400), 2))
    assert [n for n, _ in got] == list(range(400))
    pids = {pid for _, pid in got}
    assert os.getpid() in pids and len(pids) == 2


def _fail_in_parent(parent_and_n):
    parent, n = parent_and_n
    if os.getpid() == parent and n >= 100:
        raise ValueError(f"unit {n}")
    time.sleep(0.001)
    return n


def test_a_failure_in_a_range_the_parent_runs_comes_in_order():
    got = []
    with pytest.raises(ValueError, match=r"unit (\d+)") as e:
        for v in ordered_map(_fail_in_parent, [(os.getpid(), n) for n in range(400)], 2):
            got.append(v)
    assert got == list(range(int(str(e.value).split()[1])))


def _die_in_worker(parent_and_n):
    parent, n = parent_and_n
    if os.getpid() != parent and n >= 50:
        os._exit(3)
    time.sleep(0.001)
    return n


def test_a_worker_that_dies_stops_the_run_in_order():
    from kdump.jobs.fanout import WorkerDied

    got = []
    before = _children(os.getpid())     # a session's broker may be a child of this process too
    with pytest.raises(WorkerDied, match=r"exit status 3\)"):
        for v in ordered_map(_die_in_worker, [(os.getpid(), n) for n in range(400)], 2):
            got.append(v)
    assert got == list(range(len(got))) and len(got) < 400
    assert _children(os.getpid()) <= before


def _unpicklable(n):
    return (lambda: n) if n == 30 else n


def test_a_result_that_cannot_be_sent_is_an_error_in_order():
    got = []
    try:
        for v in ordered_map(_unpicklable, range(200), 2):
            got.append(v if isinstance(v, int) else v())
    except RuntimeError as e:       # unit 30 ran in the worker: its result could not be pickled
        assert "pickle" in str(e).lower() and got == list(range(len(got)))
    else:                           # unit 30 ran in this process
        assert got == list(range(200))


def test_parallel_verify_does_not_import_multiprocessing(tmp_path):
    root = _many_partitions(tmp_path, 40)
    # main(), not the console script's entry(): that ends the process before the checks below
    code = ("import sys\nfrom kdump.cli import main\nsys.argv = ['kdump', 'verify', '-q', '-j', '2', sys.argv[1]]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "assert 'multiprocessing' not in sys.modules, 'multiprocessing imported'\n")
    r = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": ok,") == 40


def test_one_unit_or_one_job_starts_no_worker(monkeypatch):
    import kdump.jobs.fanout as P

    def no_workers(*a, **k):
        raise AssertionError("a worker was started")

    monkeypatch.setattr(P, "fan_out", no_workers)
    assert list(ordered_map(_square_or_fail, [3], 8)) == [9]
    assert list(ordered_map(_square_or_fail, range(5), 1)) == [0, 1, 4, 9, 16]
    r = run_kdump("verify", "-j", "8", FIXTURES / "generated" / "zstd-v2-0")
    assert r.code == 0


def test_version_does_not_import_multiprocessing():
    code = ("import sys\nfrom kdump.cli import main\nsys.argv = ['kdump', 'verify', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "assert 'multiprocessing' not in sys.modules, 'multiprocessing imported'\n"
            "assert 'kdump.jobs.fanout' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


# -- Ctrl-C ---------------------------------------------------------------------------------------

def _many_partitions(root: Path, n: int) -> Path:
    data = build.build_v2_batch([(i, 1_700_000_000_000 + i, b"k", b"v" * 200) for i in range(50)])
    for p in range(n):
        d = root / f"t-{p}"
        d.mkdir(parents=True)
        (d / ("0" * 20 + ".log")).write_bytes(data)
    return root


def _children(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(x) for x in f.read().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc to find the workers")
def test_sigint_stops_every_worker_and_exits_130(tmp_path):
    logdir = _many_partitions(tmp_path / "logdir", 400)
    # stdout is a pipe nobody reads yet: the run stalls with workers busy, until SIGINT.
    # (SIGINT as a terminal delivers it, whatever the test run inherited: xdist's workers ignore it)
    p = subprocess.Popen([sys.executable, "-m", "kdump", "dump", "--records", "--data", "-j", "2", str(logdir)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = _children(p.pid)
            time.sleep(0.05)
        assert len(workers) == 2, "the workers never started"
        time.sleep(0.3)
        assert p.poll() is None, "the run ended before it could be interrupted"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert b"kdump: interrupted" in err or b"kdump: aborted" in err
    assert b"Traceback" not in err
    time.sleep(0.2)
    assert [w for w in workers if _alive(w)] == []


# -- real files: workers write stdout themselves, in turn ----------------------------------------

def _run_to_files(tmp_path: Path, args: list[str], tag: str) -> tuple[int, bytes, bytes]:
    out, err = tmp_path / f"{tag}.out", tmp_path / f"{tag}.err"
    with open(out, "wb") as o, open(err, "wb") as e:
        code = subprocess.run([sys.executable, "-m", "kdump", *args], stdout=o, stderr=e, cwd=ROOT).returncode
    return code, out.read_bytes(), err.read_bytes()


@pytest.mark.parametrize("args", [["dump", "--records", "--data", "--format", "text", *TREE],
                                  ["dump", "--records", "--json", *TREE],
                                  ["index", "--verify", "--format", "text", *TREE]])
def test_same_bytes_when_workers_write_to_files(tmp_path, args):
    one = _run_to_files(tmp_path, [*args, "-j", "1"], "one")
    two = _run_to_files(tmp_path, [*args, "-j", "2"], "two")
    assert len(one[1]) > 100_000
    assert two == one


def test_a_reader_going_away_ends_a_parallel_run_quietly(tmp_path):
    logdir = _many_partitions(tmp_path / "logdir", 200)
    r = subprocess.run(f"'{sys.executable}' -m kdump dump --records --data -j 2 '{logdir}' | head -c 1000 >/dev/null;"
                       f" echo ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash", capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.stdout.strip() == "0"
    assert "Traceback" not in r.stderr and "error" not in r.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc to find the workers")
def test_workers_of_a_killed_parent_do_not_stay(tmp_path):
    logdir = _many_partitions(tmp_path / "logdir", 400)
    p = subprocess.Popen([sys.executable, "-m", "kdump", "dump", "--records", "--data", "-j", "2", str(logdir)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(p.pid)
        time.sleep(0.05)
    time.sleep(0.3)
    p.kill()
    p.wait()
    p.stdout.close()
    deadline = time.monotonic() + 10
    while [w for w in workers if _alive(w)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [w for w in workers if _alive(w)] == []


def _numbered_lines(u, out):
    for k in range(50):
        out.stream.write(f"{u}:{k}\n")
    if u % 7 == 0:
        print(f"note {u}", file=sys.stderr)
    return u


@pytest.mark.parametrize("spill_at", [10, 1 << 30])
def test_workers_writing_in_turn_keep_the_order(tmp_path, monkeypatch, spill_at):
    """Units written by the workers themselves: held until their turn, or (past SPILL_AT) waiting
    for it mid-unit and then streamed; either way the order of -j 1."""
    import kdump.jobs.ordered_output as O

    monkeypatch.setattr(O._Spill, "SPILL_AT", spill_at)

    class Out:
        pass

    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        monkeypatch.setattr(sys, "stderr", e)
        out = Out()
        out.stream = o
        assert list(O.ordered_output(_numbered_lines, list(range(60)), 2, out)) == list(range(60))
    assert (tmp_path / "out").read_text() == "".join(f"{u}:{k}\n" for u in range(60) for k in range(50))
    assert (tmp_path / "err").read_text() == "".join(f"note {u}\n" for u in range(0, 60, 7))


def _wide_or_failing(u, out):
    out.stream.write(f"{u}:" + "x" * 40_000 + "\n")     # ranges far past FLUSH_AT
    if u % 9 == 0:
        print(f"note {u}", file=sys.stderr)
    if u == 45:
        raise ValueError(f"unit {u}")
    return u


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_unit_failing_in_its_turn_ends_the_output_where_j1_does(tmp_path, monkeypatch, jobs):
    """Workers write a range's output in 64 KiB pieces when its turn comes; a unit that raises
    still has what it wrote before written, nothing after it is, and the error comes in order:
    the bytes of -j 1."""
    import kdump.jobs.ordered_output as O

    class Out:
        pass

    got = []
    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        monkeypatch.setattr(sys, "stderr", e)
        out = Out()
        out.stream = o
        with pytest.raises(ValueError, match="unit 45"):
            for r in O.ordered_output(_wide_or_failing, list(range(200)), jobs, out):
                got.append(r)
    assert got == list(range(45))
    assert (tmp_path / "out").read_text() == "".join(f"{u}:" + "x" * 40_000 + "\n" for u in range(46))
    assert (tmp_path / "err").read_text() == "".join(f"note {u}\n" for u in range(0, 46, 9))


def _listing_by_workers(monkeypatch) -> list:
    """From here on, a log dir's partition dirs are listed by workers from the first one;
    returns the functions ``ordered_map`` is given, to show that it was."""
    import kdump.jobs.fanout as P
    import kdump.storage.levels as K

    monkeypatch.setattr(K, "PARALLEL_LISTING_FROM", 1)
    given = []
    real = P.ordered_map

    def recording(fn, units, jobs, **kw):
        given.append(getattr(fn, "__name__", None))
        return real(fn, units, jobs, **kw)

    monkeypatch.setattr(P, "ordered_map", recording)
    return given


@pytest.mark.parametrize("name", ["verify", "info", "verify-strict-problems"])
def test_partition_dirs_listed_by_workers_give_the_same_output(name, monkeypatch):
    one = run_kdump(*COMMANDS[name], "--format", "json", "-j", "1")
    given = _listing_by_workers(monkeypatch)
    two = run_kdump(*COMMANDS[name], "--format", "json", "-j", "2")
    assert "_partition_listing" in given
    assert (two.code, two.out, two.err) == (one.code, one.out, one.err)


def test_log_dirs_named_like_partitions_are_found_when_workers_list(tmp_path, monkeypatch):
    from kdump.storage.levels import resolve

    seg = build.build_v2_batch([(0, 1_700_000_000_000, b"k", b"v")], base_offset=0)
    for d in ("kafka-1/orders-0", "kafka-1/orders-1", "kafka-0/a-3", "t-2", "t-10", "t-1", "z-0.abcd", "y"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "00000000000000000000.log").write_bytes(seg)
    (tmp_path / "t-1" / "00000000000000000000.index").write_bytes(b"")
    (tmp_path / "t-1" / "00000000000000000000.log.deleted").write_bytes(seg)
    (tmp_path / "empty-4").mkdir()
    one = resolve([str(tmp_path)])
    given = _listing_by_workers(monkeypatch)
    assert resolve([str(tmp_path)], jobs=2) == one
    assert "_partition_listing" in given
    assert [os.path.relpath(f.path, tmp_path) for f in one] == [
        "t-1/00000000000000000000.log", "t-1/00000000000000000000.log.deleted", "t-1/00000000000000000000.index",
        "t-2/00000000000000000000.log", "t-10/00000000000000000000.log", "kafka-0/a-3/00000000000000000000.log",
        "kafka-1/orders-0/00000000000000000000.log", "kafka-1/orders-1/00000000000000000000.log",
        "y/00000000000000000000.log", "z-0.abcd/00000000000000000000.log"]


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_verify_workers_send_text_not_reports_for_text_and_json(fmt, monkeypatch):
    """Text and NDJSON are rendered in the workers: the parent unpickles no report (a table,
    which needs them all, still gets them), and writes the bytes of -j 1."""
    import io

    from kdump.check.file_report import FileReport
    from kdump.render.output import Output
    from kdump.run.verify import run_verify

    monkeypatch.setenv("KDUMP_NO_PROGRESS", "1")
    monkeypatch.setenv("COLUMNS", "160")
    unpickled = []

    def setstate(self, state):
        unpickled.append(state["file"])
        self.__dict__.update(state)
    monkeypatch.setattr(FileReport, "__setstate__", setstate, raising=False)
    paths = [str(FIXTURES / "generated" / d) for d in ("torn-tail-0", "transactions-0", "compacted-0")]
    one, two = io.StringIO(), io.StringIO()
    assert run_verify(paths, Output(False, fmt, stream=two), jobs=2) == run_verify(
        paths, Output(False, fmt, stream=one), jobs=1) == 1
    assert two.getvalue() == one.getvalue() and one.getvalue()
    assert (unpickled != []) == (fmt == "table")
