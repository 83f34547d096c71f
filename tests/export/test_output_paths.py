"""Writes where nothing may be written: every output path (``export --out``,
``recover --salvage``) is checked by ``kdump.storage.outpath.check_output``."""

from __future__ import annotations

from pathlib import Path

from support.damage import damage_middle, make_partition, tree_state
from support.run import run_kdump


def _log_dir(root: Path) -> Path:
    """A live-looking log dir: a broker's meta.properties and checkpoints, one partition."""
    make_partition(root)
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 27\n")
    return root


def _only_error(r, code: int, line: str) -> None:
    assert r.code == code, r.err
    assert r.err == f"kdump: error: {line}\n", r.err


def test_salvage_into_the_log_dir_it_reads_is_refused(tmp_path):
    """Item 2: the plan-only run wrote 00000000000000000015.{log,index,timeindex} into the live partition."""
    logs = _log_dir(tmp_path / "logs")
    damage_middle(logs / "orders-0")
    before = tree_state(tmp_path)
    r = run_kdump("recover", str(logs / "orders-0"), "--salvage", str(logs))
    _only_error(r, 2, f"{logs}: is a Kafka log dir: a folder there would take the log dir offline or pass for a "
                      f"partition; choose another --salvage")
    assert tree_state(tmp_path) == before


def test_salvage_into_the_log_dir_of_an_input_without_broker_files_is_refused(tmp_path):
    make_partition(tmp_path / "logs")
    damage_middle(tmp_path / "logs" / "orders-0")
    before = tree_state(tmp_path)
    r = run_kdump("recover", str(tmp_path / "logs" / "orders-0"), "--salvage", str(tmp_path / "logs"))
    _only_error(r, 2, f"{tmp_path / 'logs'}: is a Kafka log dir: a folder there would take the log dir offline or "
                      f"pass for a partition; choose another --salvage")
    assert tree_state(tmp_path) == before


def test_salvage_into_another_log_dir_is_refused(tmp_path):
    """Pointed at another broker's log dir it made a duplicate partition there."""
    make_partition(tmp_path / "a")
    damage_middle(tmp_path / "a" / "orders-0")
    other = tmp_path / "b"
    other.mkdir()
    (other / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=abc\n")
    before = tree_state(tmp_path)
    r = run_kdump("recover", str(tmp_path / "a" / "orders-0"), "--salvage", str(other))
    _only_error(r, 2, f"{other}: is a Kafka log dir: a folder there would take the log dir offline or pass for a "
                      f"partition; choose another --salvage")
    r = run_kdump("recover", str(tmp_path / "a" / "orders-0"), "--salvage", str(other / "salvaged"))
    _only_error(r, 2, f"{other / 'salvaged'}: is inside the Kafka log dir {other}: a folder there would take the "
                      f"log dir offline or pass for a partition; choose another --salvage")
    assert tree_state(tmp_path) == before


def test_salvage_into_a_partition_is_refused(tmp_path):
    make_partition(tmp_path / "a")
    make_partition(tmp_path / "b", name="other-3")
    damage_middle(tmp_path / "a" / "orders-0")
    r = run_kdump("recover", str(tmp_path / "a" / "orders-0"), "--salvage", str(tmp_path / "b" / "other-3"))
    _only_error(r, 2, f"{tmp_path / 'b' / 'other-3'}: is a partition directory: kdump writes no output into a "
                      f"partition; choose another --salvage")


def test_salvage_elsewhere_still_works_and_reruns(tmp_path):
    make_partition(tmp_path / "logs")
    damage_middle(tmp_path / "logs" / "orders-0")
    for _ in range(2):
        r = run_kdump("recover", str(tmp_path / "logs" / "orders-0"), "--salvage", str(tmp_path / "out"))
        assert r.code == 1, r.err
    assert sorted(p.name for p in (tmp_path / "out" / "orders-0").iterdir()) == \
        ["00000000000000000015.index", "00000000000000000015.log", "00000000000000000015.timeindex"]


def test_export_into_a_live_log_dir_is_refused(tmp_path):
    """Item 5: ``export --out LOGDIR/exported`` made a folder a broker takes the log dir offline for."""
    logs = _log_dir(tmp_path / "logs")
    before = tree_state(tmp_path)
    for out, where in ((logs / "exported", f"is inside the Kafka log dir {logs}"), (logs, "is a Kafka log dir")):
        r = run_kdump("export", str(logs / "orders-0"), "--out", str(out), "--format", "ndjson")
        _only_error(r, 2, f"{out}: {where}: a folder there would take the log dir offline or pass for a "
                          f"partition; choose another --out")
    # a copied partition's folder, without a broker's files, is no live log dir: exported beside it
    bare = tmp_path / "bare"
    make_partition(bare)
    r = run_kdump("export", str(bare / "orders-0"), "--out", str(bare / "exported"), "--format", "ndjson")
    assert r.code == 0 and (bare / "exported" / "_SUCCESS").exists(), r.err
    r = run_kdump("export", str(bare / "orders-0"), "--out", str(bare / "orders-0" / "x"), "--format", "ndjson")
    _only_error(r, 2, f"{bare / 'orders-0' / 'x'}: is inside the partition directory {bare / 'orders-0'}: kdump "
                      f"writes no output into a partition; choose another --out")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "00000000000000000000.log").write_bytes((bare / "orders-0" / "00000000000000000000.log").read_bytes())
    r = run_kdump("export", str(scratch), "--out", str(scratch / "x"), "--format", "ndjson")
    _only_error(r, 2, f"{scratch / 'x'}: is inside the input PATH: choose another --out")
    assert {k: v for k, v in tree_state(tmp_path).items() if k.startswith("logs/")} == before
    assert not (scratch / "x").exists()


def test_export_overwrite_never_replaces_a_log_dir_holding_the_input(tmp_path):
    """Item 1, locally: --out holding the input (its log dir) is refused, --overwrite or not."""
    logs = _log_dir(tmp_path / "logs")
    before = tree_state(logs)
    r = run_kdump("export", str(logs / "orders-0"), "--out", str(logs), "--format", "ndjson", "--overwrite")
    _only_error(r, 2, f"{logs}: is a Kafka log dir: a folder there would take the log dir offline or pass for a "
                      f"partition; choose another --out")
    plain = tmp_path / "plain"
    make_partition(plain, name="y-2")
    r = run_kdump("export", str(plain / "y-2"), "--out", str(plain / "y-2"), "--format", "ndjson", "--overwrite")
    _only_error(r, 2, f"{plain / 'y-2'}: is a partition directory: kdump writes no output into a partition; choose "
                      f"another --out")
    copy = tmp_path / "copy"
    make_partition(copy, name="x-1")
    r = run_kdump("export", str(logs / "orders-0"), "--out", str(copy), "--format", "ndjson", "--overwrite")
    _only_error(r, 2, f"{copy}: refusing to write over {copy / 'x-1'}: it holds Kafka log files; choose another "
                      f"--out")
    assert tree_state(logs) == before and (copy / "x-1").is_dir()


def test_export_to_a_plain_folder_beside_a_loose_segment_works(tmp_path):
    """A scratch folder with a segment in it is not a partition (not named <topic>-<partition>)."""
    d = make_partition(tmp_path / "logs")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "00000000000000000000.log").write_bytes((d / "00000000000000000000.log").read_bytes())
    r = run_kdump("export", str(scratch / "00000000000000000000.log"), "--out", str(scratch / "out"),
                  "--format", "ndjson")
    assert r.code == 0, r.err


def test_exports_to_x_and_x_dot_y_keep_each_other_s_staging(tmp_path):
    """Item 4: ``_siblings`` matched ``name + "."`` as a prefix, so an export to ``x`` removed the
    staging directory of one running to ``x.y``."""
    from kdump.export.outdir import staged

    make_partition(tmp_path / "logs")
    with staged(str(tmp_path / "x.y"), False, [str(tmp_path / "logs")]) as other:
        (Path(other) / "part").write_text("x.y's\n")
        with staged(str(tmp_path / "x"), False, [str(tmp_path / "logs")]) as mine:
            (Path(mine) / "part").write_text("x's\n")
        assert Path(other, "part").read_text() == "x.y's\n"
    assert (tmp_path / "x.y" / "part").read_text() == "x.y's\n" and (tmp_path / "x.y" / "_SUCCESS").exists()
    assert (tmp_path / "x" / "part").read_text() == "x's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "x", "x.y"]


def test_a_killed_run_s_staging_is_still_cleared(tmp_path):
    from kdump.export.remote_out import staging_name

    make_partition(tmp_path / "logs")
    (tmp_path / staging_name("x")).mkdir()
    (tmp_path / staging_name("x.y")).mkdir()
    r = run_kdump("export", str(tmp_path / "logs"), "--out", str(tmp_path / "x"), "--format", "ndjson")
    assert r.code == 0, r.err
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left[1:] == ["logs", "x"] and left[0].startswith(".kdump-staging-") and left[0].endswith(".x.y")
