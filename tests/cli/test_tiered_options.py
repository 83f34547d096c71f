"""The --remote-* options' usage errors and what they say on a log dir with no tiered topic
(the broker-backed checks are tests/kafka/test_tiered.py)."""

from __future__ import annotations

from support.run import FIXTURES, run_kdump

PARTITION = FIXTURES / "real" / "BiggerBrain__kafka" / "data" / "lsx1-0"


def test_remote_metadata_needs_remote_storage(tmp_path):
    r = run_kdump("verify", str(PARTITION), "--remote-metadata", str(tmp_path))
    assert r.code == 2
    assert r.err.splitlines()[0] == "kdump: error: --remote-metadata needs --remote-storage"


def test_remote_storage_is_never_repaired(tmp_path):
    r = run_kdump("verify", str(PARTITION), "--remote-storage", str(tmp_path), "--truncate")
    assert r.code == 2
    assert r.err.splitlines()[0] == ("kdump: error: --remote-storage is read here only: not with --truncate or "
                                     "--engine spark")


def test_a_remote_store_that_is_not_there(tmp_path):
    missing = tmp_path / "nothing"
    r = run_kdump("dump", str(PARTITION), "--remote-storage", str(missing))
    assert r.code == 3
    assert r.err == f"kdump: error: {missing}: cannot read the remote store: not a directory\n"


def test_no_tiered_topic_here(tmp_path):
    r = run_kdump("info", str(PARTITION), "--remote-storage", str(tmp_path))
    assert (r.code, r.out) == (0, "")
    assert r.err == f"kdump: note: no __remote_log_metadata partition under {PARTITION.parent}\n"


def test_export_with_spark_writer_is_refused(tmp_path):
    r = run_kdump("export", str(PARTITION), "--out", str(tmp_path / "o"), "--remote-storage", str(tmp_path),
                  "--engine", "spark", "--writer", "spark")
    assert r.code == 2
    assert r.err.splitlines()[0] == ("kdump: error: --remote-storage exports with --writer arrow (Spark's own "
                                     "writer plans the PATHS alone)")


def test_export_no_tiered_topic_here(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    r = run_kdump("export", str(PARTITION), "--out", str(store / "o"), "--remote-storage", str(store))
    assert r.code == 2      # --out is never inside an input, the remote store included
    r = run_kdump("export", str(PARTITION), "--out", str(tmp_path / "o"), "--remote-storage", str(store),
                  "--format", "ndjson")
    assert r.code == 0, r.err
    assert r.err.splitlines()[0] == f"kdump: note: no __remote_log_metadata partition under {PARTITION.parent}"
    assert (tmp_path / "o" / "_SUCCESS").exists()
