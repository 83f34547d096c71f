"""Every --json line of every command is one object with a documented ``object`` key
(docs/json.md's list), on real fixtures."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from support.run import FIXTURES, GENERATED, ROOT, run_kdump

SHAPES = FIXTURES / "broker" / "all-shapes"
GZIP = SHAPES / "codec-gzip-0"


def documented() -> set[str]:
    """The names in the first column of docs/json.md's table of objects."""
    names: set[str] = set()
    for line in (ROOT / "docs" / "json.md").read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return names


RUNS = {
    "dump": ["dump", SHAPES, "--records", "--data"],
    "dump --files": ["dump", "--files", GZIP / "00000000000000000000.log"],
    "dump side files": ["dump", GZIP / "00000000000000000000.index", GZIP / "00000000000000000000.timeindex",
                        GZIP / "00000000000000000120.snapshot", GZIP / "leader-epoch-checkpoint"],
    "dump legacy": ["dump", FIXTURES / "real", "--records"],
    "verify": ["verify", SHAPES],
    "verify damaged": ["verify", GENERATED],
    "index": ["index", SHAPES],
    "timeindex": ["timeindex", SHAPES],
    "recover": ["recover", GENERATED],
    "info": ["info", SHAPES],
    "info --timeline": ["info", SHAPES, "--timeline"],
    "txn": ["txn", SHAPES],
    "groups": ["groups", SHAPES],
    "metadata": ["metadata", SHAPES / "__cluster_metadata-0"],
    "records": ["records", SHAPES],
    "records damaged": ["records", GENERATED / "torn-tail-0"],
}


def _objects(out: str) -> list[dict]:
    lines = out.splitlines()
    assert lines, "no output"
    objs = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) and list(o)[0] == "object" for o in objs)
    return objs


@pytest.mark.parametrize("name", list(RUNS))
def test_every_line_is_a_documented_object(name):
    r = run_kdump(*RUNS[name], "--json")
    assert r.code in (0, 1), r.err
    kinds = {o["object"] for o in _objects(r.out)}
    assert kinds <= documented(), kinds - documented()


def test_the_objects_each_command_names(tmp_path):
    seen = {name: {o["object"] for o in _objects(run_kdump(*args, "--json").out)} for name, args in RUNS.items()}
    assert seen["dump"] == {"batch"} and seen["dump side files"] == {"entry"}
    assert seen["verify"] == {"file"} and seen["index"] == {"entry", "file"}
    assert seen["recover"] == {"recovery", "step"} and seen["info --timeline"] == {"timeline"}
    assert seen["records damaged"] == {"record", "damage"}


def test_export_and_rebuild_objects(tmp_path):
    r = run_kdump("export", GZIP, "--out", tmp_path / "out", "--format", "ndjson", "--json", "-q")
    assert r.code == 0, r.err
    assert [o["object"] for o in _objects(r.out)] == ["export"]
    part = tmp_path / "codec-gzip-0"
    shutil.copytree(GZIP, part)
    r = run_kdump("index", part, "--rebuild", "--json", "-q")
    assert r.code in (0, 1), r.err
    kinds = {o["object"] for o in _objects(r.out)}
    assert "rebuild" in kinds and kinds <= documented()
